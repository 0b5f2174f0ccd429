/**
 * The fake API server in its own process for the reflect benchmark (so its memory is not the
 * reflector's): loaded with a generated shape, then driven over IPC — relabel many pods as fast
 * as it can, or one pod at a time — reporting when each change was made (absolute clock, ms).
 */
import { generateShape, type ShapeName } from '../src/generate/shapes.ts';
import { FakeApiServer } from '../test/fake-apiserver/server.ts';
import { FakeStore } from '../test/fake-apiserver/store.ts';

type Message =
  | { type: 'relabel'; from: number; count: number; value: string }
  | { type: 'relabelOne'; index: number; value: string }
  | { type: 'requests' }
  | { type: 'stop' };

const clock = (): number => performance.timeOrigin + performance.now();
const [shape = 'a', scaleText = '1'] = process.argv.slice(2);
const cluster = generateShape(shape as ShapeName, { scale: Number(scaleText), seed: 1 });
const store = new FakeStore(undefined, 400_000);
for (const object of [...cluster.namespaces, ...cluster.policies, ...cluster.pods]) store.apply(object);
store.compact();
const server = new FakeApiServer({ store });
const url = await server.start();
const pods = cluster.pods as { metadata: { labels: Record<string, string> } }[];

function relabel(index: number, value: string): void {
  const pod = pods[index % pods.length]!;
  pod.metadata.labels = { ...pod.metadata.labels, bench: value };
  store.apply(pod);
}

process.on('message', (message: Message) => {
  if (message.type === 'stop') {
    void server.stop().then(() => process.exit(0));
  } else if (message.type === 'requests') {
    // The requests since the last ask, by verb (the agent-direct benchmark's API load).
    const counts: Record<string, number> = {};
    for (const request of server.requests.splice(0)) counts[request.verb] = (counts[request.verb] ?? 0) + 1;
    process.send!({ type: 'requests', counts });
  } else if (message.type === 'relabelOne') {
    relabel(message.index, message.value);
    process.send!({ type: 'applied', at: clock() });
  } else {
    const first = clock();
    let done = 0;
    // In slices, so the server's sockets get to write between them.
    const slice = (): void => {
      const end = Math.min(message.count, done + 500);
      for (; done < end; done++) relabel(message.from + done, message.value);
      if (done < message.count) setImmediate(slice);
      else process.send!({ type: 'relabeled', first, last: clock() });
    };
    slice();
  }
});
process.send!({
  type: 'ready',
  url,
  pods: pods.length,
  objects: cluster.namespaces.length + cluster.policies.length + pods.length,
});
