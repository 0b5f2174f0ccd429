/**
 * `npm run bench -- all [--quick] [--only NAME,…] [--out FILE] [--verbose]`: every headline
 * figure in one table. Each benchmark runs in its own process (a crash, an out-of-memory or a
 * timeout costs that row, not the suite, and memory figures are that benchmark's own), with the
 * load average noted next to its figures — the machine is shared, so a figure taken under load
 * says so. `--quick` takes the small sizes (a few minutes in all): run it before landing, so a
 * regression is seen when it is made. Without it, the sizes docs/BENCHMARKS.md reports.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FILE_VARIABLE, figuresIn, type Figure } from './report.ts';

interface Step {
  /** The benchmark (`npm run bench -- NAME`). */
  readonly bench: string;
  readonly quick: readonly string[];
  readonly full: readonly string[];
  /** Runs only as root (kernel benchmarks). */
  readonly root?: boolean;
  /** Extra Node options (a bigger heap for full-scale tiers). */
  readonly node?: readonly string[];
}

/**
 * What the suite runs. Benchmarks report their headline figures through `reportFigure`; one that
 * does not yet shows as "no figures reported" (its own output is in the log).
 */
const STEPS: readonly Step[] = [
  {
    bench: 'compile',
    quick: ['--shape', 'a', '--scale', '0.1', '--runs', '3'],
    full: ['--shape', 'a', '--scale', '0.1,1', '--runs', '3'],
  },
  {
    bench: 'compile',
    quick: ['--shape', 'b,c', '--scale', '1', '--runs', '1'],
    full: ['--shape', 'b,c', '--scale', '1', '--runs', '3'],
  },
  { bench: 'files', quick: ['--scale', '0.1', '--runs', '1'], full: ['--scale', '0.1,1', '--runs', '3'] },
  {
    bench: 'incremental',
    quick: ['--scale', '0.1', '--events', '500'],
    full: ['--scale', '1', '--events', '2000'],
  },
  { bench: 'matrix', quick: ['--runs', '3'], full: ['--runs', '5'] },
  { bench: 'matrix', quick: ['--shape-b', '--runs', '1'], full: ['--shape-b', '--runs', '3'] },
  { bench: 'matrix-files', quick: ['--runs', '1'], full: ['--runs', '3'] },
  {
    bench: 'reflect',
    quick: ['--scale', '0.1', '--changes', '5000', '--samples', '100', '--runs', '1'],
    full: ['--scale', '1', '--changes', '30000', '--samples', '300', '--runs', '5'],
  },
  { bench: 'classifier', quick: ['--lookups', '1000000'], full: ['--lookups', '1000000'] },
  {
    bench: 'tiers',
    quick: ['--scale', '0.1', '--runs', '1'],
    full: ['--scale', '1', '--runs', '3'],
    node: ['--max-old-space-size=8000'],
  },
  { bench: 'nftables', quick: ['--events', '100'], full: ['--events', '400'], root: true },
  { bench: 'lint', quick: ['--scale', '0.1', '--runs', '1'], full: ['--scale', '0.1', '--runs', '3'] },
  { bench: 'diff', quick: ['--scale', '0.02', '--runs', '1'], full: ['--scale', '0.1', '--runs', '3'] },
  {
    bench: 'ebpf',
    quick: ['--runs', '1', '--scale', '0.1', '--events', '100'],
    full: ['--runs', '3', '--scale', '1', '--events', '200'],
    root: true,
  },
];

const option = (args: readonly string[], name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};

export async function suiteBenchmark(args: string[]): Promise<void> {
  const quick = args.includes('--quick');
  const only = option(args, 'only')?.split(',');
  const verbose = args.includes('--verbose');
  const timeout = Number(option(args, 'timeout') ?? (quick ? 600 : 3600)) * 1000;
  const isRoot = process.getuid?.() === 0;
  const runner = fileURLToPath(new URL('./run.js', import.meta.url));
  const scratch = mkdtempSync(join(tmpdir(), `palisade-bench-suite-${process.pid}-`));
  const rows: { step: string; figures: Figure[]; problem?: string; seconds: number }[] = [];
  const started = performance.now();
  try {
    for (const step of STEPS) {
      if (only && !only.includes(step.bench)) continue;
      const stepArgs = quick ? step.quick : step.full;
      const label = `${step.bench} ${stepArgs.join(' ')}`;
      if (step.root && !isRoot) {
        rows.push({ step: label, figures: [], problem: 'skipped: needs root', seconds: 0 });
        continue;
      }
      process.stderr.write(`… ${label}\n`);
      const file = join(scratch, `${rows.length}.jsonl`);
      writeFileSync(file, '');
      const stepStarted = performance.now();
      const outcome = await runStep(runner, step, stepArgs, file, timeout);
      const seconds = (performance.now() - stepStarted) / 1000;
      if (verbose || outcome.problem) process.stderr.write(outcome.output);
      const figures = figuresIn(readFileSync(file, 'utf8'));
      rows.push({ step: label, figures, seconds, ...(outcome.problem ? { problem: outcome.problem } : {}) });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const table = formatTable(rows, quick, (performance.now() - started) / 1000);
  process.stdout.write(table);
  const out = option(args, 'out');
  if (out) writeFileSync(out, table);
  if (rows.some((r) => r.problem && !r.problem.startsWith('skipped'))) process.exitCode = 1;
}

/** Runs one benchmark in its own process group, killed whole at the timeout. */
function runStep(
  runner: string,
  step: Step,
  args: readonly string[],
  file: string,
  timeout: number,
): Promise<{ output: string; problem?: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=64', '--expose-gc', ...(step.node ?? []), runner, step.bench, ...args],
      { env: { ...process.env, [FILE_VARIABLE]: file }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, timeout);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const problem = timedOut
        ? `timed out after ${timeout / 1000} s`
        : code !== 0
          ? `failed (${signal ?? `exit ${code}`})`
          : undefined;
      resolve({ output, ...(problem ? { problem } : {}) });
    });
  });
}

function formatTable(
  rows: readonly { step: string; figures: Figure[]; problem?: string; seconds: number }[],
  quick: boolean,
  seconds: number,
): string {
  const lines = [`| figure | value | target | runs | load |`, `| --- | --- | --- | --- | --- |`];
  for (const row of rows) {
    lines.push(`| **${row.step}** (${row.seconds.toFixed(0)} s) ${row.problem ?? ''} | | | | |`);
    if (!row.problem && row.figures.length === 0)
      lines.push(`| (no figures reported; see --verbose) | | | | |`);
    for (const f of row.figures) {
      const runs = f.runs ? f.runs.map((r) => round(r)).join(', ') : '';
      lines.push(
        `| ${f.name}${f.note ? ` (${f.note})` : ''} | ${round(f.value)} ${f.unit} | ${f.target ?? ''} | ${runs} | ${f.load?.toFixed(1) ?? ''} |`,
      );
    }
  }
  const [one, five] = loadavg();
  lines.push(
    '',
    `${quick ? 'quick suite' : 'full suite'}: ${seconds.toFixed(0)} s; load average now ${one?.toFixed(1)} (5 min ${five?.toFixed(1)}) on 2 shared cores`,
  );
  return lines.join('\n') + '\n';
}

function round(value: number): string {
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}
