/**
 * `npm run bench -- engines [--scale 0.1] [--policies 10000] [--runs 5] [--matrix-runs 3]` (0: no matrix)
 * `[--processes [--rounds 3]]`:
 * the same number of policies written as Kubernetes NetworkPolicies, as Calico NetworkPolicies and
 * as CiliumNetworkPolicies (src/generate/engine-policies.ts: shape a's three kinds of policy in
 * each engine's language) over shape a's namespaces and pods, and what reading them costs:
 * - read: the manifests (one JSON document per object, as `palisade generate` writes them)
 *   parsed, validated and decoded into the model;
 * - compile: every pod's tables from the loaded cluster (the compiled path every datapath gets);
 * - matrix: the single-port matrix TCP/8080 of every pod pair by the reference evaluator
 *   (`--by pod --engine reference`: every pair's verdict walked through the tiers);
 * - matrix auto: the same question as `palisade matrix --port 8080` computes it at this size
 *   (`--by auto`, which is by workload here, `--engine auto`: the compiled classes; the output
 *   itself is not written).
 * The engines are measured in turn within each run (NetworkPolicy, Calico, Cilium, then the next
 * run in another order), so a busy moment of the shared machine weighs on all alike; medians,
 * with the one-minute load average. Each engine's objects of one run are kept until its next run
 * has made its own: a long-lived process (the agent, serve) keeps its pipeline, and dropping it
 * before the forced collection threw away the engine's optimized code with the objects' shapes
 * (V8 deoptimizes code whose embedded shapes die), so every run compiled it again — 300 ms of
 * compiler threads per run, more for the engine with more code, which a long-lived process never
 * pays and a one-shot command pays once. Each figure is given as wall time and as the process's CPU
 * time (user + system, GC threads included): on a machine shared at load 7 on 2 cores the wall
 * time of one step varied threefold between runs, its CPU time much less. The CPU ratio is also
 * given paired by run (each engine's over NetworkPolicy's of the same run, median and range; the
 * first run, whose first engine carries the warm-up, left out). `--processes [--rounds 3]`
 * measures each engine in a process of its own instead (engines-processes.ts).
 */
import { loadavg } from 'node:os';
import { computeViewMatrix } from '../src/analysis/index.ts';
import { generateEnginePolicies, generateShape, type PolicyEngineName } from '../src/generate/index.ts';
import { loadFromTexts } from '../src/ingest/load.ts';
import type { Cluster } from '../src/model/types.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { CHILD_FIGURES, enginesInProcesses } from './engines-processes.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const STEPS = ['read', 'compile', 'matrix auto', 'matrix'] as const;
type Step = (typeof STEPS)[number];
const PORT_8080 = [{ port: 8080, protocol: 'TCP' }] as const;

const ENGINES: readonly PolicyEngineName[] = ['networkpolicy', 'calico', 'cilium'];
const LABEL: Record<PolicyEngineName, string> = {
  networkpolicy: 'NetworkPolicy',
  calico: 'Calico',
  cilium: 'Cilium',
};

export function enginesBenchmark(args: string[]): void {
  if (args.includes('--processes')) {
    enginesInProcesses(args);
    return;
  }
  const only = args.includes('--engine')
    ? (args[args.indexOf('--engine') + 1] as PolicyEngineName)
    : undefined;
  if (only !== undefined && !ENGINES.includes(only))
    throw new Error(`--engine: one of ${ENGINES.join(', ')}`);
  const engines = only ? [only] : ENGINES;
  const scale = option(args, 'scale', 0.1);
  const count = option(args, 'policies', 10_000);
  const runs = option(args, 'runs', 5);
  const matrixRuns = option(args, 'matrix-runs', 3);
  const shape = generateShape('a', { scale, seed: 1 });
  const base = [...shape.namespaces, ...shape.pods].map((o) => JSON.stringify(o));
  const texts = new Map(
    engines.map((engine) => {
      const policies = generateEnginePolicies(engine, count, shape.namespaces.length, 1);
      return [engine, '---\n' + [...base, ...policies.map((o) => JSON.stringify(o))].join('\n---\n') + '\n'];
    }),
  );
  process.stdout.write(
    `shape a ×${scale}: ${shape.pods.length} pods in ${shape.namespaces.length} namespaces, ${count} policies of each engine; load ${loadavg()[0]?.toFixed(1)}\n`,
  );
  type Figures = Record<Step, number[]>;
  const none = (): Figures => ({ read: [], compile: [], matrix: [], 'matrix auto': [] });
  const times: Record<PolicyEngineName, Figures> = {
    networkpolicy: none(),
    calico: none(),
    cilium: none(),
  };
  const cpu: Record<PolicyEngineName, Figures> = { networkpolicy: none(), calico: none(), cilium: none() };
  let cpuStarted = process.cpuUsage();
  const cpuSince = (): number => {
    const used = process.cpuUsage(cpuStarted);
    return (used.user + used.system) / 1000;
  };
  const loads: number[] = [];
  const kept = new Map<PolicyEngineName, readonly unknown[]>();
  for (let run = 0; run < runs; run++) {
    // Each run starts with another engine: none is always measured first (or last).
    const order = engines.map((_, i) => engines[(i + run) % engines.length] as PolicyEngineName);
    for (const engine of order) {
      const text = texts.get(engine) as string;
      globalThis.gc?.();
      let started = performance.now();
      cpuStarted = process.cpuUsage();
      const loaded = loadFromTexts([{ name: `${engine}.yaml`, text }]);
      times[engine].read.push(performance.now() - started);
      cpu[engine].read.push(cpuSince());
      progress(run, engine, 'read', times[engine].read, cpu[engine].read);
      check(engine, loaded.cluster, loaded.diagnostics, count);
      globalThis.gc?.();
      started = performance.now();
      cpuStarted = process.cpuUsage();
      const pipeline = new PolicyPipeline();
      pipeline.apply({ type: 'resync', cluster: loaded.cluster });
      times[engine].compile.push(performance.now() - started);
      cpu[engine].compile.push(cpuSince());
      progress(run, engine, 'compile', times[engine].compile, cpu[engine].compile);
      globalThis.gc?.();
      started = performance.now();
      cpuStarted = process.cpuUsage();
      // As the command line asks it (src/cli/commands/matrix.ts).
      const auto = computeViewMatrix(loaded.cluster, {
        by: 'workload',
        queries: PORT_8080,
        engine: 'auto',
        byFamily: true,
      });
      times[engine]['matrix auto'].push(performance.now() - started);
      cpu[engine]['matrix auto'].push(cpuSince());
      progress(run, engine, 'matrix auto', times[engine]['matrix auto'], cpu[engine]['matrix auto']);
      let reference: unknown;
      if (run < matrixRuns) {
        globalThis.gc?.();
        started = performance.now();
        cpuStarted = process.cpuUsage();
        reference = computeViewMatrix(loaded.cluster, { by: 'pod', queries: PORT_8080, engine: 'reference' });
        times[engine].matrix.push(performance.now() - started);
        cpu[engine].matrix.push(cpuSince());
        progress(run, engine, 'matrix', times[engine].matrix, cpu[engine].matrix);
      }
      loads.push(loadavg()[0] ?? 0);
      kept.set(engine, [loaded, pipeline, auto, reference]);
    }
  }
  if (only) {
    // A child of `--processes`: its figures for the parent, which reports them.
    process.stdout.write(`${CHILD_FIGURES}${JSON.stringify({ cpu: cpu[only], load: median(loads) })}\n`);
    return;
  }
  const s = (values: readonly number[]): string => `${(median(values) / 1000).toFixed(2)} s`;
  for (const what of STEPS) {
    if (times.networkpolicy[what].length === 0) continue; // --matrix-runs 0
    const np = median(times.networkpolicy[what]);
    for (const engine of ENGINES) {
      const value = median(times[engine][what]);
      reportFigure({
        name: `engines ×${scale}, ${count} ${LABEL[engine]} policies: ${what}`,
        value: value / 1000,
        unit: 's',
        runs: times[engine][what].map((v) => v / 1000),
        ...(engine !== 'networkpolicy' ? { target: '≤ the NetworkPolicies’' } : {}),
      });
      const cpuValue = median(cpu[engine][what]);
      const cpuNp = median(cpu.networkpolicy[what]);
      process.stdout.write(
        `${`${what} cpu`.padEnd(12)} ${LABEL[engine].padEnd(14)} ${s(cpu[engine][what])} (median of ${cpu[engine][what].length}: ${cpu[
          engine
        ][what]
          .map((v) => (v / 1000).toFixed(2))
          .join(
            ', ',
          )})${engine === 'networkpolicy' ? '' : `, ×${(cpuValue / cpuNp).toFixed(2)} the NetworkPolicies'${pairedRatios(cpu[engine][what], cpu.networkpolicy[what])}`}\n`,
      );
      process.stdout.write(
        `${what.padEnd(8)} ${LABEL[engine].padEnd(14)} ${s(times[engine][what])} (median of ${times[engine][what].length}: ${times[
          engine
        ][what]
          .map((v) => (v / 1000).toFixed(2))
          .join(
            ', ',
          )})${engine === 'networkpolicy' ? '' : `, ×${(value / np).toFixed(2)} the NetworkPolicies'`}\n`,
      );
    }
  }
  process.stdout.write(
    `load average during the runs: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}\n`,
  );
}

/**
 * The engine's CPU over NetworkPolicy's within each run (the three are measured one after the
 * other), as the median and range of those ratios: the load of this shared machine drifts between
 * runs more than within one, and a ratio of two medians carries that drift. The first run is left
 * out when there are others: NetworkPolicy is measured first in it and carries the process's
 * warm-up alone.
 */
function pairedRatios(values: readonly number[], networkPolicy: readonly number[]): string {
  const ratios = values
    .map((value, run) => value / (networkPolicy[run] as number))
    .slice(values.length > 1 ? 1 : 0);
  return `; paired by run ×${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
}

/** Each figure as it is taken (a run on a loaded machine is long: partial runs still say something). */
function progress(
  run: number,
  engine: PolicyEngineName,
  what: string,
  values: readonly number[],
  cpu: readonly number[],
): void {
  const value = values[values.length - 1] ?? 0;
  const used = cpu[cpu.length - 1] ?? 0;
  process.stdout.write(
    `  run ${run + 1}: ${LABEL[engine]} ${what} ${(value / 1000).toFixed(2)} s, ${(used / 1000).toFixed(2)} s CPU (load ${loadavg()[0]?.toFixed(1)})\n`,
  );
}

/** The input read as meant: every policy, no error. */
function check(
  engine: PolicyEngineName,
  cluster: Cluster,
  diagnostics: readonly { severity: string; message: string }[],
  count: number,
): void {
  const error = diagnostics.find((d) => d.severity === 'error');
  if (error) throw new Error(`${engine}: ${error.message}`);
  const read = engine === 'networkpolicy' ? cluster.policies.length : cluster.clusterPolicies.length;
  if (read !== count) throw new Error(`${engine}: read ${read} policies of ${count}`);
}
