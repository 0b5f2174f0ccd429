/**
 * The eBPF benchmark's update part (`npm run bench -- ebpf`, item 3 of bench/ebpf.bench.ts):
 * policy change → maps committed at shape (a) node-0.
 */
import type { Endpoint, NetworkPolicy } from '../src/model/types.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { EbpfRenderer } from '../src/datapaths/ebpf/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { loadProgram, PinnedMaps, unload, type PinLocation } from '../src/datapaths/ebpf/kernel/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { say } from './ebpf-common.ts';

export async function updates(scale: number, events: number): Promise<void> {
  const location: PinLocation = { instance: `bench-up-${process.pid}` };
  loadProgram(location);
  let maps: PinnedMaps | undefined;
  try {
    maps = PinnedMaps.open(location);
    const generated = generateShape('a', { scale, seed: 1 });
    const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
    const state = new ClusterState();
    const renderer = new EbpfRenderer({ state, node: 'node-0', kernel: maps });
    const pipeline = new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] });
    const started = performance.now();
    pipeline.apply({ type: 'resync', cluster });
    const resync = performance.now() - started;
    renderer.settle();
    const content = renderer.content();
    say(
      `\nshape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies; node-0 renders ` +
        `${content.records.filter((r) => r.record?.endpoint).length} endpoint addresses: ${content.tables.length} tables, ` +
        `${content.records.length} address records, ${content.groups.size} groups; resync and first write ${resync.toFixed(0)} ms`,
    );
    const pods = cluster.endpoints;
    const local = pods.filter((p) => p.node === 'node-0');
    const measure = async (label: string, change: (i: number) => Parameters<PolicyPipeline['apply']>[0]) => {
      const all: number[] = [];
      const committed: number[] = [];
      const operations: number[] = [];
      // CPU time of the same calls: on a shared machine, wall time also counts waiting for a core.
      const cpu: number[] = [];
      for (let i = 0; i < events; i++) {
        const epoch = renderer.epoch;
        const t = performance.now();
        const c = process.cpuUsage();
        pipeline.apply(change(i));
        const ms = performance.now() - t;
        const used = process.cpuUsage(c);
        all.push(ms);
        if (renderer.epoch !== epoch && renderer.lastCommit && renderer.lastCommit.operations > 1) {
          committed.push(ms);
          cpu.push((used.user + used.system) / 1000);
          operations.push(renderer.lastCommit.operations);
        }
        // Events a few milliseconds apart: the tail's grace period ends in the background.
        await new Promise((r) => setTimeout(r, 25));
      }
      const p99 = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length * 0.99)] ?? 0;
      reportFigure({
        name: `eBPF ${label}: change → maps committed, median`,
        value: median(committed),
        unit: 'ms',
        target: '≤ 5 ms',
      });
      say(
        `${label}: ${committed.length} of ${events} changed node-0's maps; change → maps committed median ` +
          `${median(committed).toFixed(2)} ms (CPU ${median(cpu).toFixed(2)} ms), p99 ${p99(committed).toFixed(2)} ms (${median(operations)} map operations ` +
          `before the switch, median); every event median ${median(all).toFixed(2)} ms`,
      );
    };
    await measure('pod label changes (half on node-0)', (i) => {
      const source = (
        i % 2 === 0 ? local[(i / 2) % local.length] : pods[(i * 7919) % pods.length]
      ) as Endpoint;
      const donor = pods[(i * 104729 + 17) % pods.length] as Endpoint;
      return { type: 'upsert-pod', pod: { ...source, labels: { ...donor.labels } } };
    });
    const localNamespaces = [...new Set(local.map((p) => p.namespace))];
    const policies = cluster.policies.filter(
      (p) => localNamespaces.includes(p.namespace) && p.name === 'cross-namespace',
    );
    await measure('policy changes (a port of a policy selecting a node-0 pod)', (i) => {
      const policy = policies[i % policies.length] as NetworkPolicy;
      const rule = policy.ingress[0];
      const changed: NetworkPolicy = {
        ...policy,
        ingress: rule ? [{ ...rule, ports: [{ protocol: 'TCP', port: 8080 + (i % 7) }] }] : [],
      };
      return { type: 'upsert-policy', policy: changed };
    });
    const before = Date.now();
    renderer.settle();
    say(
      `tail after the last change (grace period and old side): ${Date.now() - before} ms when waited for at once`,
    );
  } finally {
    maps?.close();
    unload(location);
  }
}
