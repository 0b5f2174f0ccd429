/**
 * `npm run bench -- scale [--scales 0.1,1] [--runs 3] [--timeout 300] [--cli PATH] [--only NAME,…]`
 * (names: explain, explain-class, explain-b, matrix, json, diff, diff-class, lint, lint-class,
 * validate, svg, shape-b, serve): issue 38's figures —
 * analysis of shape (a) as a user runs it, from files, each command a whole process (wall time,
 * CPU time of the process, peak RSS, bytes written):
 * - `explain` of every workload, at each scale, and the CPU exponent between the scales; the same
 *   `--by class` (`explain-class`); of shape (b) at the largest scale, per endpoint, per class and
 *   auto (`explain-b`: few classes, where classes pay);
 * - `matrix` with no `--port` (all ports), at each scale, and its exponent;
 * - `matrix -o json` at ×0.1 (time and bytes, or the refusal);
 * - `diff` between shape (a) and a busy pull request's copy of it (diff.bench.ts), and its exponent;
 * - `diff --by class` the same way (`diff-class`);
 * - `lint` and `validate` at the largest scale, and `lint --by class` (`lint-class`);
 * - `matrix -o svg` at ×0.1;
 * - `matrix` (default text) of shape (b) at the largest scale;
 * - `serve` at ×0.1: start → the document with its first view, and every API answer the page
 *   may ask for at its defaults (time and size).
 * `--cli PATH` runs another build of the executable — the code before a change (its
 * `dist/bin/palisade.js`) — so before and after are measured by one benchmark. A run over
 * `--timeout` seconds is killed and reported as such (the rest of that figure's runs skipped).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { generateShape } from '../src/generate/shapes.ts';
import { listeningUrl, runCli, scratchDirectory, type CliRun } from './child.ts';
import { changed } from './diff.bench.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? String(args[i + 1]) : fallback;
}

const text = (objects: readonly object[]): string =>
  objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';

/** A shape at a scale in `dir`, as `generate` writes it. */
function writeGenerated(dir: string, kind: 'a' | 'b', scale: number): ReturnType<typeof generateShape> {
  const shape = generateShape(kind, { scale, seed: 1 });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'namespaces.yaml'), text(shape.namespaces));
  writeFileSync(join(dir, 'pods.yaml'), text(shape.pods));
  writeFileSync(join(dir, 'policies.yaml'), text(shape.policies));
  return shape;
}

/** Shape (a) at a scale in `dir`, and its busy-PR copy in `dir-changed`. */
function writeShape(dir: string, scale: number): { shape: string; changedShape: string } {
  const shape = writeGenerated(dir, 'a', scale);
  const changedDir = `${dir}-changed`;
  mkdirSync(changedDir, { recursive: true });
  const all = [...shape.namespaces, ...shape.pods, ...shape.policies];
  writeFileSync(join(changedDir, 'all.yaml'), text(changed(all, shape.namespaces.length, false)));
  return { shape: dir, changedShape: changedDir };
}

interface Measured {
  readonly runs: readonly CliRun[];
  readonly timedOut: boolean;
}

const seconds = (r: CliRun): number => r.millis / 1000;
const cpuSeconds = (r: CliRun): number => r.cpuMillis / 1000;

function describe(name: string, m: Measured, timeoutS: number, target?: string): string {
  const done = m.runs.filter((r) => !r.timedOut);
  if (done.length === 0)
    return `${name}: stopped after ${timeoutS} s (no answer)${target ? `  [target ${target}]` : ''}`;
  const wall = median(done.map(seconds));
  const cpu = median(done.map(cpuSeconds));
  const peak = median(done.map((r) => r.peakMiB));
  const bytes = done[0]?.stdoutBytes ?? 0;
  const codes = [...new Set(done.map((r) => r.code))].join(',');
  const figures = [
    `${wall.toFixed(2)} s wall (runs ${done.map((r) => seconds(r).toFixed(2)).join(', ')})`,
    `${cpu.toFixed(2)} CPU-s`,
    `peak RSS ${peak.toFixed(0)} MiB`,
    `${formatBytes(bytes)} written`,
    `exit ${codes}`,
  ];
  return `${name}: ${figures.join(', ')}${m.timedOut ? `; a run stopped after ${timeoutS} s` : ''}${target ? `  [target ${target}]` : ''}`;
}

function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (bytes >= 2 ** 10) return `${(bytes / 2 ** 10).toFixed(1)} KiB`;
  return `${bytes} B`;
}

async function measure(
  args: readonly string[],
  runs: number,
  options: { cli?: string; timeoutS: number },
): Promise<Measured> {
  const results: CliRun[] = [];
  for (let run = 0; run < runs; run++) {
    const result = await runCli(args, {
      ...(options.cli ? { cli: options.cli } : {}),
      timeoutMs: options.timeoutS * 1000,
      // A bigger heap than Node's default, as a user with a large cluster would give it.
      nodeOptions: ['--max-old-space-size=8192'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    results.push(result);
    if (result.timedOut) return { runs: results, timedOut: true };
  }
  return { runs: results, timedOut: false };
}

/** log(cpu at the larger scale / cpu at the smaller) / log(scale ratio). */
function exponent(small: Measured, large: Measured, ratio: number): number | undefined {
  const a = small.runs.filter((r) => !r.timedOut);
  const b = large.runs.filter((r) => !r.timedOut);
  if (a.length === 0 || b.length === 0) return undefined;
  return Math.log(median(b.map(cpuSeconds)) / median(a.map(cpuSeconds))) / Math.log(ratio);
}

function report(name: string, m: Measured, timeoutS: number, target?: string): void {
  process.stdout.write(`${describe(name, m, timeoutS, target)}\n`);
  const done = m.runs.filter((r) => !r.timedOut);
  if (done.length === 0) return;
  reportFigure({
    name,
    value: median(done.map(seconds)),
    unit: 's',
    runs: done.map(seconds),
    ...(target ? { target } : {}),
  });
  reportFigure({ name: `${name}: CPU`, value: median(done.map(cpuSeconds)), unit: 's' });
  reportFigure({ name: `${name}: peak RSS`, value: median(done.map((r) => r.peakMiB)), unit: 'MiB' });
}

/** `palisade serve` as a process: start → the whole document (with its first view), then each API answer. */
async function serveFigures(cli: string | undefined, dir: string, timeoutS: number): Promise<string[]> {
  const { CLI } = await import('./child.ts');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['--max-old-space-size=8192', cli ?? CLI, 'serve', '-f', dir, '--port', '0'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const lines: string[] = [];
  try {
    const url = await listeningUrl(child);
    const get = async (path: string): Promise<{ millis: number; bytes: number; status: number }> => {
      const at = performance.now();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutS * 1000);
      try {
        const response = await fetch(`${url}${path.replace(/^\//, '')}`, { signal: controller.signal });
        let bytes = 0;
        for await (const chunk of response.body ?? []) bytes += (chunk as Uint8Array).length;
        return { millis: performance.now() - at, bytes, status: response.status };
      } catch {
        return { millis: NaN, bytes: NaN, status: 0 };
      } finally {
        clearTimeout(timer);
      }
    };
    const first = await get('/');
    lines.push(
      `serve: start → the document with its first view ${((performance.now() - started) / 1000).toFixed(2)} s (${formatBytes(first.bytes)})`,
    );
    for (const path of [
      '/api/summary',
      '/api/heatmap?level=namespace&port=any',
      '/api/graph?port=any&group-by=namespace',
      '/api/graph?port=any&group-by=workload',
      '/api/lint',
      '/api/diagnostics',
      '/api/matrix?port=any&by=workload',
    ]) {
      const answer = await get(path);
      lines.push(
        Number.isNaN(answer.millis)
          ? `serve: GET ${path}: no answer within ${timeoutS} s`
          : `serve: GET ${path}: ${answer.status}, ${(answer.millis / 1000).toFixed(2)} s, ${formatBytes(answer.bytes)}`,
      );
    }
  } finally {
    child.kill('SIGKILL');
  }
  return lines;
}

export async function scaleBenchmark(args: string[]): Promise<void> {
  const scales = option(args, 'scales', '0.1,1').split(',').map(Number);
  const runs = Number(option(args, 'runs', '3'));
  const timeoutS = Number(option(args, 'timeout', '300'));
  const cliOption = option(args, 'cli', '');
  const cli = cliOption === '' ? undefined : cliOption;
  const only = args.includes('--only') ? option(args, 'only', '').split(',') : undefined;
  const wanted = (name: string): boolean => !only || only.includes(name);
  const scratch = scratchDirectory('scale');
  process.stdout.write(
    `executable: ${cli ?? 'this build'}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  try {
    const dirs = new Map<number, { shape: string; changedShape: string }>();
    const dirOf = (scale: number): { shape: string; changedShape: string } => {
      let found = dirs.get(scale);
      if (!found) dirs.set(scale, (found = writeShape(join(scratch.path, `a-${scale}`), scale)));
      return found;
    };
    const options = { ...(cli ? { cli } : {}), timeoutS };
    const smallest = scales[0] as number;
    const largest = scales[scales.length - 1] as number;
    const ratio = largest / smallest;
    const perScale = async (
      label: string,
      command: (dir: { shape: string; changedShape: string }) => string[],
      target?: string,
    ): Promise<void> => {
      const measured: Measured[] = [];
      for (const scale of scales) {
        const m = await measure(command(dirOf(scale)), runs, options);
        measured.push(m);
        report(`${label} ×${scale}`, m, timeoutS, scale === largest ? target : undefined);
      }
      if (measured.length >= 2) {
        const e = exponent(measured[0] as Measured, measured[measured.length - 1] as Measured, ratio);
        process.stdout.write(
          `${label}: CPU exponent ×${smallest} → ×${largest}: ${e === undefined ? 'not measured (a run did not finish)' : e.toFixed(2)}\n`,
        );
        if (e !== undefined)
          reportFigure({ name: `${label}: CPU exponent ×${smallest} → ×${largest}`, value: e, unit: '' });
      }
    };
    if (wanted('explain'))
      await perScale('explain', (d) => ['explain', '-f', d.shape], '≤ 30 s, ≤ 3 GB, exponent ≤ 1.2');
    if (wanted('explain-class'))
      await perScale('explain --by class', (d) => ['explain', '-f', d.shape, '--by', 'class']);
    if (wanted('explain-b')) {
      // Shape (b): 10 classes at ×1, where one explanation per class stands for 1,000 pods.
      const dir = join(scratch.path, `b-${largest}`);
      writeGenerated(dir, 'b', largest);
      // Per endpoint forced past --max-output; auto (the default) says the classes instead.
      for (const by of ['endpoint', 'class', 'auto'])
        report(
          `explain shape (b) ×${largest} --by ${by}`,
          await measure(
            ['explain', '-f', dir, '--by', by, ...(by === 'endpoint' ? ['--force'] : [])],
            runs,
            options,
          ),
          timeoutS,
        );
    }
    if (wanted('matrix'))
      await perScale(
        'matrix (all ports)',
        (d) => ['matrix', '-f', d.shape],
        '≤ 30 s, ≤ 3 GB, exponent ≤ 1.2',
      );
    if (wanted('json'))
      report(
        'matrix -o json ×0.1',
        await measure(['matrix', '-f', dirOf(0.1).shape, '-o', 'json'], runs, options),
        timeoutS,
        '≤ 10 s, a usable output (classes) or a refusal with advice',
      );
    if (wanted('diff'))
      await perScale(
        'diff (busy PR)',
        (d) => ['diff', '-f', d.shape, '--to', d.changedShape],
        '≤ 20 s, exponent ≤ 1.1',
      );
    if (wanted('diff-class'))
      await perScale('diff --by class (busy PR)', (d) => [
        'diff',
        '-f',
        d.shape,
        '--to',
        d.changedShape,
        '--by',
        'class',
      ]);
    if (wanted('lint-class'))
      report(
        `lint --by class ×${largest}`,
        await measure(['lint', '-f', dirOf(largest).shape, '--by', 'class'], runs, options),
        timeoutS,
      );
    if (wanted('lint'))
      report(
        `lint ×${largest}`,
        await measure(['lint', '-f', dirOf(largest).shape], runs, options),
        timeoutS,
        '≤ 15 s',
      );
    if (wanted('validate'))
      report(
        `validate ×${largest}`,
        await measure(['validate', '-f', dirOf(largest).shape], runs, options),
        timeoutS,
        '≤ 15 s',
      );
    if (wanted('svg'))
      report(
        'matrix -o svg ×0.1',
        await measure(['matrix', '-f', dirOf(0.1).shape, '-o', 'svg'], runs, options),
        timeoutS,
        'a readable aggregated picture in ≤ 10 s',
      );
    if (wanted('shape-b')) {
      // Shape (b): few classes, each pair allowing hundreds of port ranges — the text output
      // that once ran to hundreds of gigabytes.
      const dir = join(scratch.path, `b-${largest}`);
      writeGenerated(dir, 'b', largest);
      report(
        `matrix shape (b) ×${largest}`,
        await measure(['matrix', '-f', dir], runs, options),
        timeoutS,
        'an output that cannot fill a disk by surprise',
      );
    }
    if (wanted('serve'))
      for (const line of await serveFigures(cli, dirOf(0.1).shape, timeoutS))
        process.stdout.write(`${line}\n`);
  } finally {
    scratch.remove();
  }
}
