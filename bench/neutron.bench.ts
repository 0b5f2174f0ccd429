/**
 * `npm run bench -- neutron [--scale 0.01] [--changes 20] [--runs 3]`: Kuryr's controller
 * (`--datapath neutron`) against a real neutron-server on loopback (src/datapaths/neutron/
 * local-server.ts; Debian's neutron-server, noauth, SQLite), over generated shape (a).
 *  1. first sync: every group, rule and port of the cluster created from nothing (writes, time);
 *  2. policy change → Neutron writes committed: one policy's port changed in the store, then the
 *     controller's realization (render, compare with what it holds, write the difference) timed
 *     until Neutron has answered every write: median and p99, and the writes per change;
 *  3. resync of the unchanged cluster by a new controller (a restart): Neutron read, writes made
 *     (0 expected) and the time it took.
 * Each run starts its own neutron-server; figures are medians over runs, with the load average.
 */
import { loadavg } from 'node:os';
import { openNeutronNode } from '../src/datapaths/neutron/node.ts';
import { createPodNetwork, NeutronClient, startNeutron } from '../src/datapaths/neutron/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

const say = (line: string): boolean => process.stdout.write(`${line}\n`);
const load = (): number => loadavg()[0] ?? 0;

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
}

type Raw = Record<string, unknown> & {
  metadata: Record<string, unknown> & { name: string; namespace?: string };
};

/** Shape (a) with UIDs and generations, as objects read from a cluster carry them. */
function shapeObjects(scale: number): Raw[] {
  const shape = generateShape('a', { scale, seed: 1 });
  const objects = [...shape.namespaces, ...shape.policies, ...shape.pods] as Raw[];
  return objects.map((o, i) => ({
    ...o,
    metadata: {
      ...o.metadata,
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      ...(o.kind === 'NetworkPolicy' ? { generation: 1 } : {}),
    },
  }));
}

/** The policy's first numbered port moved by `delta` (a new generation): one policy changed. */
function changePort(policy: Raw, delta: number): Raw {
  const text = JSON.stringify(policy.spec).replace(
    /"port":(\d+)/,
    (_m, n: string) => `"port":${Number(n) + delta}`,
  );
  const generation = Number(policy.metadata.generation ?? 1) + 1;
  return { ...policy, metadata: { ...policy.metadata, generation }, spec: JSON.parse(text) as unknown };
}

interface RunFigures {
  readonly firstMs: number;
  readonly firstWrites: number;
  readonly changeMs: number[];
  readonly changeWrites: number[];
  readonly resyncMs: number;
  readonly resyncWrites: number;
  readonly groups: number;
  readonly rules: number;
}

async function oneRun(scale: number, changes: number): Promise<RunFigures> {
  // Shape (a) ×0.01 needs ~2,400 groups (one per policy, peer and named-port group): more than
  // the local server's default quota, which the tests' quota case relies on.
  const server = await startNeutron({
    quotas: { securityGroups: 100_000, rules: 1_000_000, ports: 100_000 },
  });
  try {
    const project = 'palisade-bench';
    const client = new NeutronClient({ url: server.url, project });
    const network = await createPodNetwork(client, 'pods', ['10.0.0.0/8']);
    let objects = shapeObjects(scale);
    const state = new ClusterState();
    state.resync(loadFromObjects(objects).cluster);
    const context = { node: 'controller', state, neutron: { url: server.url, project, network } };
    const controller = openNeutronNode(context);
    await controller.prepare();
    let started = performance.now();
    await controller.realize(true);
    const firstMs = performance.now() - started;
    const firstWrites = controller.calls().writes;
    const { tables: groups, rules } = controller.counts();
    // Policies with a numbered port, changed one at a time, back and forth.
    const changeable = objects.filter(
      (o) => o.kind === 'NetworkPolicy' && /"port":\d+/.test(JSON.stringify(o.spec)),
    );
    const changeMs: number[] = [];
    const changeWrites: number[] = [];
    for (let i = 0; i < changes; i++) {
      const policy = changeable[i % changeable.length]!;
      const current = objects.find(
        (o) =>
          o.kind === 'NetworkPolicy' &&
          o.metadata.name === policy.metadata.name &&
          o.metadata.namespace === policy.metadata.namespace,
      )!;
      const next = changePort(current, i % 2 === 0 ? 1 : -1);
      objects = objects.map((o) => (o === current ? next : o));
      state.resync(loadFromObjects(objects).cluster);
      const writes = controller.calls().writes;
      started = performance.now();
      await controller.realize(false);
      changeMs.push(performance.now() - started);
      changeWrites.push(controller.calls().writes - writes);
    }
    // A restart: a new controller over the same (unchanged) cluster.
    const restarted = openNeutronNode(context);
    started = performance.now();
    await restarted.prepare();
    await restarted.realize(true);
    const resyncMs = performance.now() - started;
    return {
      firstMs,
      firstWrites,
      changeMs,
      changeWrites,
      resyncMs,
      resyncWrites: restarted.calls().writes,
      groups,
      rules,
    };
  } finally {
    await server.stop();
  }
}

const p99 = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
};

export async function neutronBenchmark(args: string[]): Promise<void> {
  const scale = Number(option(args, 'scale', '0.01'));
  const changes = Number(option(args, 'changes', '20'));
  const runs = Number(option(args, 'runs', '3'));
  const results: RunFigures[] = [];
  for (let run = 1; run <= runs; run++) {
    const figures = await oneRun(scale, changes);
    results.push(figures);
    say(
      `run ${run}: ${figures.groups} groups, ${figures.rules} rules; first sync ${figures.firstWrites} writes in ${figures.firstMs.toFixed(0)} ms; ` +
        `change median ${median(figures.changeMs).toFixed(0)} ms, p99 ${p99(figures.changeMs).toFixed(0)} ms, writes/change median ${median(figures.changeWrites)} (max ${Math.max(...figures.changeWrites)}); ` +
        `restart resync ${figures.resyncWrites} writes in ${figures.resyncMs.toFixed(0)} ms (load ${load().toFixed(2)})`,
    );
  }
  const label = `neutron shape a ×${scale}`;
  const changeMedian = median(results.map((r) => median(r.changeMs)));
  const changeP99 = median(results.map((r) => p99(r.changeMs)));
  const writes = median(results.map((r) => median(r.changeWrites)));
  const resyncWrites = Math.max(...results.map((r) => r.resyncWrites));
  say(
    `${label}: policy change → Neutron writes committed median ${changeMedian.toFixed(0)} ms, p99 ${changeP99.toFixed(0)} ms; ` +
      `${writes} writes per change; restart over the unchanged cluster: ${resyncWrites} writes in ${median(results.map((r) => r.resyncMs)).toFixed(0)} ms; ` +
      `first sync ${median(results.map((r) => r.firstWrites))} writes in ${median(results.map((r) => r.firstMs)).toFixed(0)} ms (median of ${runs} runs, load ${load().toFixed(2)})`,
  );
  reportFigure({
    name: `${label}: policy change → writes committed (median)`,
    value: Math.round(changeMedian),
    unit: 'ms',
    runs: results.map((r) => Math.round(median(r.changeMs))),
  });
  reportFigure({
    name: `${label}: policy change → writes committed (p99)`,
    value: Math.round(changeP99),
    unit: 'ms',
  });
  reportFigure({ name: `${label}: writes per policy change`, value: writes, unit: 'writes' });
  reportFigure({
    name: `${label}: writes on restart over an unchanged cluster`,
    value: resyncWrites,
    unit: 'writes',
    target: '0',
  });
}
