/**
 * `npm run bench -- matrix-files [--runs N] [--skip-large]`: `palisade matrix` as a user runs
 * it, from files, as a whole process (wall time, peak RSS), with the engine it picks by itself:
 * - shape a ×0.02 (2,000 pods) without --port (allowed port sets per pair): ≤ 10 s, ≤ 1 GB;
 * - shape a ×0.1 (10,000 pods) with --port 80: ≤ 20 s (the 100-million-cell table written to
 *   a pipe read as fast as it comes);
 * - shape a ×0.02, --port 80, -o json into a slow reader: memory stays flat;
 * - issue 22's inputs: 5,000 matchExpressions policies × 1,000 pods, and 1,000 ipBlocks ×
 *   1,000 excepts (hostile-shapes.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { runCli, scratchDirectory, type CliRun } from './child.ts';
import { exceptsShape, selectorsShape } from './hostile-shapes.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

interface Case {
  readonly name: string;
  readonly args: (dir: string) => string[];
  readonly target?: string;
  readonly slowReader?: boolean;
}

export async function matrixFilesBenchmark(args: string[]): Promise<void> {
  const runs = option(args, 'runs', 3);
  const scratch = scratchDirectory('matrix-files');
  try {
    const shapes: Record<string, string> = {};
    for (const scale of ['0.02', '0.1']) {
      if (scale === '0.1' && args.includes('--skip-large')) continue;
      const dir = join(scratch.path, `a-${scale}`);
      const generated = await runCli(['generate', '--shape', 'a', '--scale', scale, '-o', dir]);
      if (generated.code !== 0) throw new Error(`generate failed: ${generated.stderr}`);
      shapes[scale] = dir;
    }
    const selectors = join(scratch.path, 'selectors.yaml');
    writeFileSync(
      selectors,
      selectorsShape()
        .map((o) => JSON.stringify(o))
        .join('\n---\n'),
    );
    const excepts = join(scratch.path, 'excepts.yaml');
    writeFileSync(
      excepts,
      exceptsShape()
        .map((o) => JSON.stringify(o))
        .join('\n---\n'),
    );
    const cases: Case[] = [
      {
        name: 'matrix -f shape a ×0.02 (2,000 pods), no --port',
        args: () => ['matrix', '-f', shapes['0.02'] as string],
        target: '≤ 10 s, ≤ 1 GB',
      },
      ...(shapes['0.1']
        ? [
            {
              name: 'matrix -f shape a ×0.1 (10,000 pods) --port 80',
              // --force: its ~300 MB of text is past --max-output's default, and writing it is
              // what this figure measures.
              args: () => ['matrix', '-f', shapes['0.1'] as string, '--port', '80', '--force'],
              target: '≤ 20 s',
            },
          ]
        : []),
      {
        name: 'matrix -f shape a ×0.02 --port 80 -o json, slow reader',
        // --force: its ~430 MB of JSON is past --max-output's default; memory while writing it
        // into a slow reader is what this figure measures.
        args: () => ['matrix', '-f', shapes['0.02'] as string, '--port', '80', '-o', 'json', '--force'],
        slowReader: true,
        target: 'flat memory',
      },
      {
        name: 'matrix: 5,000 matchExpressions policies × 1,000 pods --port 80',
        args: () => ['matrix', '-f', selectors, '--port', '80'],
      },
      {
        name: 'matrix: 5,000 matchExpressions policies × 1,000 pods, no --port',
        args: () => ['matrix', '-f', selectors],
      },
      {
        name: 'matrix: 1,000 ipBlocks × 1,000 excepts, 100 pods --port 80',
        args: () => ['matrix', '-f', excepts, '--port', '80'],
      },
      {
        name: 'matrix: 1,000 ipBlocks × 1,000 excepts, 100 pods, no --port',
        args: () => ['matrix', '-f', excepts],
      },
    ];
    for (const c of cases) {
      const results: CliRun[] = [];
      for (let run = 0; run < runs; run++) {
        const result = await runCli(c.args(scratch.path), { slowReader: c.slowReader === true });
        if (result.code !== 0)
          throw new Error(`${c.name} failed (${result.code}): ${result.stderr.slice(0, 500)}`);
        results.push(result);
      }
      const seconds = results.map((r) => r.millis / 1000);
      const peaks = results.map((r) => r.peakMiB);
      reportFigure({
        name: c.name,
        value: median(seconds),
        unit: 's',
        runs: seconds,
        ...(c.target ? { target: c.target } : {}),
      });
      reportFigure({ name: `${c.name}: peak RSS`, value: median(peaks), unit: 'MiB', runs: peaks });
      process.stdout.write(
        `${c.name}: ${median(seconds).toFixed(2)} s (runs ${seconds.map((s) => s.toFixed(2)).join(', ')}), ` +
          `peak RSS ${median(peaks).toFixed(0)} MiB, ${((results[0]?.stdoutBytes ?? 0) / 2 ** 20).toFixed(1)} MiB of output\n`,
      );
    }
  } finally {
    scratch.remove();
  }
}
