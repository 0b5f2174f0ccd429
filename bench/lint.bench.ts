/**
 * `npm run bench -- lint [--scale 0.1] [--runs 3]`: `palisade lint` on shape (a) — at ×0.1,
 * 2,500 namespaces, 10,000 pods, 7,500 policies — from the manifests' text (as `generate`
 * writes them) to the findings, and the checks alone on the loaded cluster.
 */
import { lintCluster, objectLocator } from '../src/analysis/lint/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromTexts } from '../src/ingest/load.ts';
import { reportFigure } from './report.ts';
import { timeRunsWithCpu } from './cpu-time.ts';
import { median, ms, timeRuns } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

/** A generated shape as the text of its three files, as `palisade generate` writes them. */
export function shapeFiles(scale: number, seed = 1): { name: string; text: string }[] {
  const shape = generateShape('a', { scale, seed });
  const text = (objects: readonly object[]): string =>
    objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';
  return [
    { name: 'namespaces.yaml', text: text(shape.namespaces) },
    { name: 'pods.yaml', text: text(shape.pods) },
    { name: 'policies.yaml', text: text(shape.policies) },
  ];
}

export function lintBenchmark(args: string[]): void {
  const scale = option(args, 'scale', 0.1);
  const runs = option(args, 'runs', 3);
  const files = shapeFiles(scale);
  const endToEnd = timeRunsWithCpu(runs, () => {
    const loaded = loadFromTexts(files);
    return {
      loaded,
      report: lintCluster(loaded.cluster, {
        locator: objectLocator(loaded.rawObjects),
        diagnostics: loaded.diagnostics,
      }),
    };
  });
  const { loaded, report } = endToEnd.result;
  const checks = timeRuns(runs, () =>
    lintCluster(loaded.cluster, {
      locator: objectLocator(loaded.rawObjects),
      diagnostics: loaded.diagnostics,
    }),
  );
  reportFigure({
    id: `lint.x${scale}`,
    name: `lint shape a ×${scale} from manifest text`,
    value: median(endToEnd.millis),
    unit: 'ms',
    target: '≤ 10 s',
    runs: endToEnd.millis,
  });
  reportFigure({
    id: `lint.x${scale}.cpu`,
    name: `lint shape a ×${scale} from manifest text, CPU time`,
    value: median(endToEnd.cpuMillis),
    unit: 'ms',
    target: '≤ 10 s',
    runs: endToEnd.cpuMillis,
  });
  reportFigure({
    id: `lint.x${scale}.checks`,
    name: `lint shape a ×${scale}, checks alone`,
    value: median(checks.millis),
    unit: 'ms',
    runs: checks.millis,
  });
  const counts = new Map<string, number>();
  for (const f of report.findings) counts.set(f.code, (counts.get(f.code) ?? 0) + 1);
  process.stdout.write(
    `shape a ×${scale}: ${loaded.cluster.endpoints.length} pods, ${loaded.cluster.policies.length} policies; ` +
      `${report.findings.length} findings (${[...counts].map(([c, n]) => `${c} ${n}`).join(', ')})\n` +
      `lint from manifest text: median ${ms(median(endToEnd.millis))} over ${runs} runs (min ${ms(Math.min(...endToEnd.millis))}, max ${ms(Math.max(...endToEnd.millis))})\n` +
      `  CPU time of those runs (every thread of the process): median ${ms(median(endToEnd.cpuMillis))} (${endToEnd.cpuMillis.map(ms).join(', ')})\n` +
      `lint checks alone: median ${ms(median(checks.millis))} over ${runs} runs (min ${ms(Math.min(...checks.millis))}, max ${ms(Math.max(...checks.millis))})\n`,
  );
}
