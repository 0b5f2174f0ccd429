/**
 * `npm run bench -- suggest [--scale 0.1] [--runs 3] [--flows-per-pod 4]`: `palisade suggest`
 * on shape (a) — at ×0.1, 2,500 namespaces and 10,000 pods — from a flow file's text to the
 * verified policies' YAML: reading the NDJSON, joining it with the loaded cluster, units,
 * policies, the verification (the matrix of every pod under the suggestion) and the text. The
 * flows are deterministic: per pod, a neighbour in its namespace, a pod anywhere, and an address
 * outside, on a few ports, plus one denied record (left out) per ten pods.
 */
import { generateShape, podIp } from '../src/generate/shapes.ts';
import { loadFromTexts } from '../src/ingest/load.ts';
import { seededRandom } from '../src/generate/random.ts';
import { readFlowFile } from '../src/flows/index.ts';
import type { FlowRecord } from '../src/flows/index.ts';
import { observeFlows, suggestPolicies, suggestionYaml } from '../src/analysis/index.ts';
import { shapeFiles } from './lint.bench.ts';
import { reportFigure } from './report.ts';
import { timeRunsWithCpu } from './cpu-time.ts';
import { median, ms } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const PORTS = [
  { protocol: 'TCP', port: 8080 },
  { protocol: 'TCP', port: 443 },
  { protocol: 'TCP', port: 5432 },
  { protocol: 'UDP', port: 53 },
] as const;

/** The flow file: NDJSON text. */
function flowFile(scale: number, perPod: number): { text: string; records: number } {
  const shape = generateShape('a', { scale });
  const pods = shape.pods.map((p) => {
    const meta = p.metadata as { name: string; namespace: string };
    return { id: `${meta.namespace}/${meta.name}`, namespace: meta.namespace };
  });
  const byNamespace = new Map<string, number[]>();
  pods.forEach((p, i) => {
    const list = byNamespace.get(p.namespace);
    if (list) list.push(i);
    else byNamespace.set(p.namespace, [i]);
  });
  const random = seededRandom(7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const lines: string[] = [];
  const record = (src: number, dst: number | string, i: number, verdict: 'allowed' | 'denied'): void => {
    const { protocol, port } = PORTS[i % PORTS.length] as (typeof PORTS)[number];
    const r: FlowRecord = {
      src: { ip: podIp(src), pod: (pods[src] as { id: string }).id },
      dst: typeof dst === 'string' ? { ip: dst } : { ip: podIp(dst), pod: (pods[dst] as { id: string }).id },
      protocol,
      port,
      verdict,
      decidedBy: [],
      count: 1 + Math.floor(random() * 100),
      firstSeen: '2026-11-29T06:00:00Z',
      lastSeen: '2026-11-29T07:00:00Z',
    };
    lines.push(JSON.stringify(r));
  };
  pods.forEach((p, i) => {
    const neighbours = byNamespace.get(p.namespace) as number[];
    for (let k = 0; k < perPod; k++) {
      const kind = k % 3;
      if (kind === 0) record(i, pick(neighbours), i + k, 'allowed');
      else if (kind === 1) record(i, Math.floor(random() * pods.length), i + k, 'allowed');
      else record(i, `203.0.${Math.floor(random() * 4)}.${1 + Math.floor(random() * 250)}`, i + k, 'allowed');
    }
    if (i % 10 === 0) record(i, pick(neighbours), i, 'denied');
  });
  return { text: lines.join('\n') + '\n', records: lines.length };
}

export function suggestBenchmark(args: string[]): void {
  const scale = option(args, 'scale', 0.1);
  const runs = option(args, 'runs', 3);
  const perPod = option(args, 'flows-per-pod', 4);
  const loaded = loadFromTexts(shapeFiles(scale));
  const flows = flowFile(scale, perPod);
  const timed = timeRunsWithCpu(runs, () => {
    const read = readFlowFile('flows.ndjson', flows.text);
    const observed = observeFlows(loaded.cluster, read.flows);
    const suggestion = suggestPolicies(loaded.cluster, observed.observations, []);
    return {
      suggestion,
      yaml: suggestionYaml(suggestion, 'flows.ndjson'),
      problems: read.diagnostics.length,
    };
  });
  const { suggestion, yaml, problems } = timed.result;
  const v = suggestion.verification;
  reportFigure({
    id: `suggest.x${scale}`,
    name: `suggest shape a ×${scale}, ${flows.records} flow records`,
    value: median(timed.millis),
    unit: 'ms',
    runs: timed.millis,
  });
  reportFigure({
    id: `suggest.x${scale}.cpu`,
    name: `suggest shape a ×${scale}, ${flows.records} flow records, CPU time`,
    value: median(timed.cpuMillis),
    unit: 'ms',
    runs: timed.cpuMillis,
  });
  process.stdout.write(
    `shape a ×${scale}: ${loaded.cluster.endpoints.length} pods, ${flows.records} flow records (${problems} problems), ` +
      `${suggestion.units.length} units, ${suggestion.policies.length} policies (${Math.round(yaml.length / 1024)} KiB of YAML)\n` +
      `verification: ${v.exact ? 'exact' : `NOT exact (${v.mismatches.length}+ pairs)`}, ${v.classes} classes, ${ms(v.millis)}\n` +
      `suggest from flow text: median ${ms(median(timed.millis))} over ${runs} runs (${timed.millis.map(ms).join(', ')})\n` +
      `  CPU time: median ${ms(median(timed.cpuMillis))} (${timed.cpuMillis.map(ms).join(', ')})\n`,
  );
}
