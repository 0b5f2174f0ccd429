/**
 * `npm run bench -- diff [--scale 0.1] [--runs 3] [--case busy|every]`: `palisade diff` between shape (a) and a
 * changed copy of it — at ×0.1, 10,000 pods and 7,500 policies on each side — from the
 * manifests' text to the connections that differ, and the diff alone on the loaded clusters.
 *
 * The change is a busy pull request: in 1% of the namespaces every policy is edited (a port, a
 * peer, an ipBlock's except — which reaches every pod, the address block holding them all), one
 * namespace added with its pods and policies, one removed, five pods relabelled. A second run
 * edits the ipBlock policy of every namespace, the worst case: every pod's egress changes.
 */
import { diffConnectivity } from '../src/analysis/diff/index.ts';
import { generateShape, type Json } from '../src/generate/shapes.ts';
import { loadFromTexts } from '../src/ingest/load.ts';
import { reportFigure } from './report.ts';
import { timeRunsWithCpu } from './cpu-time.ts';
import { median, ms, timeRuns } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const text = (objects: readonly object[]): string =>
  objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';

type Spec = Record<string, unknown>;
const nsOf = (o: Json): string => String((o.metadata as Json).namespace ?? (o.metadata as Json).name);
const nsIndex = (o: Json): number => Number(nsOf(o).slice(3));

/** The changed copy: `everyNamespace` edits the ipBlock policy of every namespace too. */
export function changed(objects: readonly Json[], namespaces: number, everyNamespace: boolean): Json[] {
  const edited = (i: number): boolean => i % 100 === 7;
  const result: Json[] = [];
  for (const o of objects) {
    const i = nsIndex(o);
    if (i === 1) continue; // ns-1 is removed with everything in it
    const name = String((o.metadata as Json).name);
    if (o.kind === 'Pod' && i >= 2 && i <= 6 && name === 'pod-0') {
      // Relabelled: pod-0 turns from app-0 into app-1.
      const metadata = o.metadata as Json;
      result.push({
        ...o,
        metadata: { ...metadata, labels: { ...(metadata.labels as Json), app: 'app-1' } },
      });
      continue;
    }
    if (o.kind !== 'NetworkPolicy' || !(edited(i) || (everyNamespace && name === 'ip-blocks'))) {
      result.push(o);
      continue;
    }
    const spec = structuredClone(o.spec) as Spec;
    if (name === 'app-0')
      (spec.ingress as Spec[])[0] = { ...(spec.ingress as Spec[])[0], ports: [{ port: 9090 }] };
    if (name === 'cross-namespace') ((spec.ingress as Spec[])[0]?.ports as Spec[]).push({ port: 5432 });
    if (name === 'ip-blocks')
      ((spec.egress as Spec[])[0]?.to as Spec[])[0] = {
        ipBlock: { cidr: '10.0.0.0/8', except: [`10.${(i + 1) % 256}.0.0/16`] },
      };
    result.push({ ...o, spec });
  }
  // A new namespace: ns-0's pods and policies under another name, with addresses of their own.
  const fresh = `ns-${namespaces}`;
  for (const o of objects) {
    if (nsIndex(o) !== 0) continue;
    const copy = structuredClone<Json>(o);
    const metadata = copy.metadata as Json;
    if (copy.kind === 'Namespace') metadata.name = fresh;
    else metadata.namespace = fresh;
    if (copy.kind === 'Pod') {
      const k = Number(String(metadata.name).slice(4));
      const ip = `10.250.0.${k + 1}`;
      copy.status = { ...(copy.status as Json), podIP: ip, podIPs: [{ ip }] };
    }
    result.push(copy);
  }
  return result;
}

export function diffBenchmark(args: string[]): void {
  const scale = option(args, 'scale', 0.1);
  const runs = option(args, 'runs', 3);
  const shape = generateShape('a', { scale, seed: 1 });
  const before = [...shape.namespaces, ...shape.pods, ...shape.policies];
  const oldFiles = [{ name: 'old.yaml', text: text(before) }];
  // --case busy | every: only one of the two changes (for profiling); default both.
  const only = args.includes('--case') ? args[args.indexOf('--case') + 1] : undefined;
  for (const [label, everyNamespace, short] of [
    [
      'a busy pull request (1% of namespaces edited, one added, one removed, 5 pods relabelled)',
      false,
      'busy PR',
    ],
    [
      'the ipBlock policy of every namespace edited (every pod egress changes)',
      true,
      'every ipBlock policy edited',
    ],
  ] as const) {
    if (only && only !== (everyNamespace ? 'every' : 'busy')) continue;
    const newFiles = [
      { name: 'new.yaml', text: text(changed(before, shape.namespaces.length, everyNamespace)) },
    ];
    const endToEnd = timeRunsWithCpu(runs, () => {
      const a = loadFromTexts(oldFiles);
      const b = loadFromTexts(newFiles);
      return { a, b, diff: diffConnectivity(a.cluster, b.cluster) };
    });
    const { a, b, diff } = endToEnd.result;
    const alone = timeRuns(runs, () => diffConnectivity(a.cluster, b.cluster));
    reportFigure({
      id: `diff.${everyNamespace ? 'every' : 'busy'}.x${scale}`,
      name: `diff shape a ×${scale} (${short}) from manifest text`,
      value: median(endToEnd.millis),
      unit: 'ms',
      ...(everyNamespace ? {} : { target: '≤ 10 s' }),
      runs: endToEnd.millis,
    });
    reportFigure({
      id: `diff.${everyNamespace ? 'every' : 'busy'}.x${scale}.cpu`,
      name: `diff shape a ×${scale} (${short}) from manifest text, CPU time`,
      value: median(endToEnd.cpuMillis),
      unit: 'ms',
      ...(everyNamespace ? {} : { target: '≤ 10 s' }),
      runs: endToEnd.cpuMillis,
    });
    reportFigure({
      id: `diff.${everyNamespace ? 'every' : 'busy'}.x${scale}.alone`,
      name: `diff shape a ×${scale} (${short}), diff alone`,
      value: median(alone.millis),
      unit: 'ms',
      runs: alone.millis,
    });
    const summary = { added: 0, removed: 0, changed: 0 };
    for (const c of diff.connections) summary[c.change]++;
    process.stdout.write(
      `shape a ×${scale}, ${label}: ${a.cluster.endpoints.length} → ${b.cluster.endpoints.length} pods, ` +
        `${diff.objects.length} objects changed; ${diff.connections.length} connections differ ` +
        `(${summary.added} added, ${summary.removed} removed, ${summary.changed} changed); ${diff.stats.comparedPairs.toLocaleString('en-US')} pairs compared\n` +
        `  diff from manifest text (both inputs): median ${ms(median(endToEnd.millis))} over ${runs} runs (min ${ms(Math.min(...endToEnd.millis))}, max ${ms(Math.max(...endToEnd.millis))})\n` +
        `  CPU time of those runs (every thread of the process): median ${ms(median(endToEnd.cpuMillis))} (${endToEnd.cpuMillis.map(ms).join(', ')})\n` +
        `  diff alone: median ${ms(median(alone.millis))} over ${runs} runs (min ${ms(Math.min(...alone.millis))}, max ${ms(Math.max(...alone.millis))})\n`,
    );
  }
}
