/**
 * `npm run bench -- compile [--shape a|b|c] [--scale F] [--runs N]`: full compile of a generated
 * cluster (objects in memory → validated model → every pod's tables), with decode time, compile
 * time, tables, rules, groups, the shared-table ratio and peak RSS.
 */
import { generateShape, SHAPES, type ShapeName } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { median, ms } from './stats.ts';
import { reportFigure } from './report.ts';

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

export function compileBenchmark(args: string[]): void {
  const shapes = (option(args, 'shape') ?? SHAPES.join(',')).split(',') as ShapeName[];
  const scales = (option(args, 'scale') ?? '1').split(',').map(Number);
  const runs = Number(option(args, 'runs') ?? 3);
  for (const shape of shapes) {
    for (const scale of scales) {
      const generated = generateShape(shape, { scale, seed: 1 });
      const objects = [...generated.namespaces, ...generated.pods, ...generated.policies];
      const decodeTimes: number[] = [];
      const compileTimes: number[] = [];
      const gc = (globalThis as { gc?: () => void }).gc;
      const retained: number[] = [];
      const rss: number[] = [];
      let summary = '';
      for (let run = 0; run < runs; run++) {
        const decodeStart = performance.now();
        const { cluster, diagnostics } = loadFromObjects(objects, `shape-${shape}`);
        decodeTimes.push(performance.now() - decodeStart);
        const errors = diagnostics.filter((d) => d.severity === 'error');
        if (errors.length) throw new Error(`generated shape ${shape} has errors: ${errors[0]?.message}`);
        // The decode's garbage is collected before the clock starts: the compile is billed for
        // its own work (decode has its column), not for whenever V8 gets round to the decode's.
        gc?.();
        const compileStart = performance.now();
        const pipeline = new PolicyPipeline();
        pipeline.apply({ type: 'resync', cluster });
        compileTimes.push(performance.now() - compileStart);
        // Memory the compiled state keeps, and the process size right after the compile.
        rss.push(process.memoryUsage().rss / 1024 / 1024);
        gc?.();
        retained.push(process.memoryUsage().heapUsed / 1024 / 1024);
        const tableIds = new Set<string>();
        let rules = 0;
        let bindings = 0;
        for (const [, tables] of pipeline.compiledPods()) {
          for (const table of [tables.ingress, tables.egress]) {
            if (!table) continue;
            bindings++;
            if (!tableIds.has(table.id)) rules += table.rules.length;
            tableIds.add(table.id);
          }
        }
        summary =
          `${cluster.endpoints.length} pods, ${cluster.namespaces.size} namespaces, ${cluster.policies.length} policies → ` +
          `${tableIds.size} distinct tables for ${bindings} pod-directions (${(bindings / Math.max(tableIds.size, 1)).toFixed(1)} pods per table), ` +
          `${rules} rules, ${pipeline.state.groupCount()} address groups`;
      }
      const peak = process.resourceUsage().maxRSS / 1024;
      const TARGETS: Record<string, string> = { a1: '≤ 6 s, ≤ 1.5 GB', b1: '≤ 10 s', c1: '≤ 3 s' };
      const target = TARGETS[`${shape}${scale}`];
      reportFigure({
        id: `compile.${shape}-x${scale}`,
        name: `compile shape ${shape} ×${scale} (store + tables)`,
        value: median(compileTimes),
        unit: 'ms',
        runs: compileTimes,
        ...(target ? { target } : {}),
      });
      reportFigure({
        id: `compile.${shape}-x${scale}.decode`,
        name: `decode shape ${shape} ×${scale}`,
        value: median(decodeTimes),
        unit: 'ms',
        runs: decodeTimes,
      });
      reportFigure({ name: `compile shape ${shape} ×${scale}: peak RSS so far`, value: peak, unit: 'MiB' });
      process.stdout.write(
        `shape ${shape} ×${scale}: ${summary}\n` +
          `  decode median ${ms(median(decodeTimes))}; compile median ${ms(median(compileTimes))} ` +
          `(runs: ${compileTimes.map((t) => t.toFixed(0)).join(', ')} ms); RSS after compile median ${median(rss).toFixed(0)} MiB` +
          `${gc ? `, heap in use after GC ${median(retained).toFixed(0)} MiB (input objects included)` : ''}; peak RSS so far ${peak.toFixed(0)} MiB\n`,
      );
    }
  }
}
