/**
 * A benchmark process hosting node agents (several per process for the fan-out figure): each
 * agent is a `NodeAgent` over a datapath built as `palisade agent` builds it. It tells its parent
 * (IPC) when each agent first realized a snapshot (with the process's peak RSS) and every revision
 * realized afterwards, stamped with a clock comparable across processes.
 *
 * argv[2]: JSON `{ endpoint, prefix, datapath, nodes: [{ node, netns? }] }`.
 */
import { connectEtcd } from '../src/etcd/index.ts';
import { NodeAgent, NodeRealizer, type DatapathName } from '../src/agent/index.ts';
import { openNodeDatapath } from '../src/datapaths/index.ts';
import { KeyLayout } from '../src/reflected/index.ts';
import { ClusterState } from '../src/state/index.ts';

interface ChildConfig {
  readonly endpoint: string;
  readonly prefix: string;
  readonly datapath: DatapathName;
  readonly nodes: readonly { readonly node: string; readonly netns?: string }[];
}

const clock = (): number => performance.timeOrigin + performance.now();
const send = (message: object): void => void process.send?.(message);

const config = JSON.parse(process.argv[2] ?? '{}') as ChildConfig;
const store = await connectEtcd({ endpoints: [config.endpoint] });
const layout = new KeyLayout(config.prefix);
const agents: NodeAgent[] = [];
for (const { node, netns } of config.nodes) {
  const state = new ClusterState();
  const datapath = await openNodeDatapath(config.datapath, {
    node,
    state,
    store,
    ...(netns ? { netns } : {}),
  });
  let first = true;
  const agent = new NodeAgent({
    node,
    store,
    layout,
    realizer: new NodeRealizer({ node, layout, datapath, state }),
    version: 'bench',
    statusIntervalMs: 1000,
    onRealized: (revision) => {
      if (first) {
        first = false;
        send({
          type: 'ready',
          node,
          revision,
          at: clock(),
          maxRssMb: process.resourceUsage().maxRSS / 1024,
          cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
        });
      } else send({ type: 'realized', node, revision, at: clock() });
    },
  });
  agents.push(agent);
  await agent.start();
}

process.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  void Promise.all(agents.map((a) => a.stop())).finally(() => {
    store.close();
    process.exit(0);
  });
});
