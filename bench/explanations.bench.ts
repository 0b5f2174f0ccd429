/**
 * `npm run bench -- explanations [--rows N] [--runs N]`: what explaining costs the reference
 * matrix (issue 22 §2). The matrix asks the reference evaluator one question per pair of
 * equivalence classes; before, it asked `evaluate(…)` — the verdict with its explanation (tier
 * walk, reasons, every rule that missed put into words) — and kept `.allowed`; now it asks
 * `isAllowed(…)`, the verdict alone. Both are timed here on issue 22's two inputs, over the same
 * class pairs (the first N rows of the matrix, every column), alternating run by run so a
 * loaded machine weighs on both alike; the whole matrix's time is the warm-up (the index's per-endpoint memo, shared) plus the
 * row time × classes / N.
 */
import { endpointClasses } from '../src/analysis/equivalence.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import type { Cluster, Endpoint } from '../src/model/types.ts';
import { evaluate, indexCluster, isAllowed } from '../src/semantics/index.ts';
import type { Address, Connection } from '../src/semantics/types.ts';
import { exceptsShape, selectorsShape } from './hostile-shapes.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

type Verdict = (index: ReturnType<typeof indexCluster>, connection: Connection) => boolean;

const WAYS: Record<'explained' | 'verdict only', Verdict> = {
  explained: (index, connection) => evaluate(index, connection).allowed,
  'verdict only': (index, connection) => isAllowed(index, connection),
};

/**
 * Milliseconds to answer `rows` rows (spread evenly over the matrix) × every column on TCP/80.
 * A fresh index is warmed first by the diagonal (every class to itself, verdict only), which
 * fills what the index remembers per endpoint (the policies selecting it, each way) — a cost
 * both ways share once per matrix, returned apart so the sampled rows stand for the others.
 */
function timeRows(
  cluster: Cluster,
  classes: readonly Endpoint[],
  rows: number,
  verdict: Verdict,
): { warm: number; rows: number } {
  const index = indexCluster(cluster);
  const at = (endpoint: Endpoint): Address => ({ kind: 'endpoint', endpoint });
  const ask = (src: Endpoint, dst: Endpoint, way: Verdict): boolean =>
    way(index, { src: at(src), dst: at(dst), protocol: 'TCP', port: 80 });
  let started = performance.now();
  for (const c of classes) ask(c, c, WAYS['verdict only']);
  const warm = performance.now() - started;
  const step = classes.length / rows;
  let allowed = 0;
  started = performance.now();
  for (let r = 0; r < rows; r++)
    for (const dst of classes) if (ask(classes[Math.floor(r * step)] as Endpoint, dst, verdict)) allowed++;
  const millis = performance.now() - started;
  if (allowed < 0) throw new Error('unreachable');
  return { warm, rows: millis };
}

export function explanationsBenchmark(args: string[]): void {
  const rows = option(args, 'rows', 40);
  const runs = option(args, 'runs', 3);
  const shapes = [
    { name: '5,000 matchExpressions policies × 1,000 pods', objects: selectorsShape() },
    { name: '1,000 ipBlocks × 1,000 excepts, 100 pods', objects: exceptsShape() },
  ];
  for (const shape of shapes) {
    const { cluster } = loadFromObjects(shape.objects);
    const { representatives } = endpointClasses(cluster, cluster.endpoints, true);
    const sampled = Math.min(rows, representatives.length);
    const times: Record<string, number[]> = { explained: [], 'verdict only': [] };
    const warm: number[] = [];
    for (let run = 0; run < runs; run++)
      for (const [way, verdict] of Object.entries(WAYS)) {
        const timed = timeRows(cluster, representatives, sampled, verdict);
        warm.push(timed.warm);
        times[way]?.push(timed.rows);
      }
    const scale = representatives.length / sampled;
    const whole = (rowsMillis: number): number => (median(warm) + rowsMillis * scale) / 1000;
    const line: string[] = [];
    for (const [way, millis] of Object.entries(times)) {
      reportFigure({
        name: `reference matrix --port 80, ${shape.name}: ${way} (whole matrix, from ${sampled} rows)`,
        value: whole(median(millis)),
        unit: 's',
        runs: millis.map(whole),
      });
      line.push(
        `${way} ${whole(median(millis)).toFixed(1)} s (runs ${millis.map((m) => whole(m).toFixed(1)).join(', ')})`,
      );
    }
    const [before, after] = [median(times.explained ?? []), median(times['verdict only'] ?? [])];
    process.stdout.write(
      `${shape.name}: ${representatives.length} classes, ${sampled} rows × ${representatives.length} columns timed after a ${(median(warm) / 1000).toFixed(1)} s warm-up, ` +
        `whole matrix: ${line.join('; ')}; ×${(before / after).toFixed(1)}\n`,
    );
  }
}
