/**
 * `npm run bench -- nftables [--scale F] [--events N]`: the nftables renderer at shape (a)
 * scale for one node of 100 pods — ruleset size (does it grow with pods + groups, or with
 * pods × peers?), render time, `nft -f` apply time in a scratch network namespace (root), and
 * the latency from a pod label change to a committed nft transaction.
 */
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import type { Endpoint } from '../src/model/types.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { NftablesRenderer } from '../src/renderers/nftables/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { isRoot, persistentNftRunner, recordingRunner, run, type NftRunner } from '../src/dataplane/index.ts';
import { median } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const NETNS = 'palisade-bench';

export async function nftablesBenchmark(args: string[]): Promise<void> {
  const scale = option(args, 'scale', 1);
  const events = option(args, 'events', 200);
  const root = isRoot();
  if (!root) process.stdout.write('not root: nft apply times are skipped (rulesets are rendered only)\n');
  else {
    await run('ip', ['netns', 'delete', NETNS]);
    await run('ip', ['netns', 'add', NETNS]);
  }
  // Started before the cluster is loaded: the helper must be forked while this process is small.
  const helper = root ? persistentNftRunner({ netns: NETNS }) : undefined;
  try {
    const generated = generateShape('a', { scale, seed: 1 });
    const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
    const applyTimes: number[] = [];
    const real: NftRunner = helper ?? recordingRunner();
    const timed: NftRunner = {
      apply(script) {
        const t = performance.now();
        real.apply(script);
        applyTimes.push(performance.now() - t);
      },
    };
    const state = new ClusterState();
    const renderer = new NftablesRenderer({ state, runner: timed });
    const pipeline = new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] });
    const started = performance.now();
    pipeline.apply({ type: 'resync', cluster });
    const total = performance.now() - started;
    const script = renderer.fullScript();
    const stats = renderer.stats();
    const local = [...pipeline.compiledPods()].length;
    const groups = [...state.groupKeys()].length;
    process.stdout.write(
      `shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies, ${groups} address groups; ` +
        `node-0 renders ${local} pods\n` +
        `ruleset: ${stats.chains} chains, ${stats.rules} rules, ${stats.sets} sets, ${stats.elements} set elements, ` +
        `${stats.mapEntries} dispatch entries; script ${(script.length / 1024).toFixed(0)} KiB\n` +
        `resync + render + apply: ${total.toFixed(0)} ms` +
        (root ? ` (of which nft -f: ${(applyTimes[0] ?? 0).toFixed(0)} ms)` : '') +
        '\n',
    );

    // Pod label changes: a pod takes another pod's labels (so selections really change), half of
    // them on node-0's own pods. Events whose change reaches node-0 end in one nft transaction.
    const pods = cluster.endpoints;
    const localPods = pods.filter((p) => p.node === 'node-0');
    const all: number[] = [];
    const committed: number[] = [];
    const nftTimes: number[] = [];
    for (let i = 0; i < events; i++) {
      const source = (
        i % 2 === 0 ? localPods[(i / 2) % localPods.length] : pods[(i * 7919) % pods.length]
      ) as Endpoint;
      const donor = pods[(i * 104729 + 17) % pods.length] as Endpoint;
      const pod: Endpoint = { ...source, labels: { ...donor.labels } };
      const before = applyTimes.length;
      const t = performance.now();
      pipeline.apply({ type: 'upsert-pod', pod });
      const took = performance.now() - t;
      all.push(took);
      if (applyTimes.length > before) {
        committed.push(took);
        for (const v of applyTimes.slice(before)) nftTimes.push(v);
      }
    }
    const p99 = (values: number[]): string =>
      ([...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? 0).toFixed(2);
    process.stdout.write(
      `pod label change → committed nft transaction: median ${median(committed).toFixed(2)} ms, p99 ${p99(committed)} ms ` +
        `over the ${committed.length} of ${events} events that changed node-0's table` +
        (root ? ` (nft -f alone: median ${median(nftTimes).toFixed(2)} ms)` : ' (rendered, not applied)') +
        `; all events: median ${median(all).toFixed(2)} ms\n`,
    );
  } finally {
    helper?.close();
    if (root) await run('ip', ['netns', 'delete', NETNS]);
  }
}
