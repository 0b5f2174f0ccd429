/**
 * `npm run bench -- startup [--runs N] [--bin DIR]`: the executable's start-up as whole
 * processes, as users call it in loops and hooks — `node -e 0` (the floor), `palisade
 * --version`, and `palisade matrix -f examples/shop` — run in turn N times each (default 30), so
 * a burst of load on the shared machine hits all three alike. Reports the median wall time with
 * the quartiles and, where /usr/bin/time exists, the median CPU time (user + system: less
 * sensitive to other processes than wall time); and the load average before and after.
 * The executable is bundled afresh from the current sources into a scratch directory
 * (scripts/bundle-cli.mjs, as `npm ci` does), or taken from `--bin DIR`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { scratchDirectory } from './child.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const TIME = '/usr/bin/time';

interface Sample {
  readonly wallMs: number;
  readonly cpuMs?: number;
}

function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** One run of `node ARGS…` from the repository root: wall time, and CPU time when measurable. */
function sample(args: readonly string[]): Sample {
  const timed = existsSync(TIME);
  const [command, argv] = timed
    ? [TIME, ['-f', '%U %S', process.execPath, ...args]]
    : [process.execPath, [...args]];
  const started = process.hrtime.bigint();
  const result = spawnSync(command, argv, {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} failed: ${result.stderr}`);
  if (!timed) return { wallMs };
  const [user, system] = (result.stderr.trim().split('\n').at(-1) ?? '').split(' ').map(Number);
  return { wallMs, cpuMs: ((user ?? NaN) + (system ?? NaN)) * 1000 };
}

const quartiles = (values: readonly number[]): [number, number, number] => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return [at(0.25), median(sorted), at(0.75)];
};

export function startupBenchmark(args: string[]): void {
  const runs = Number(option(args, 'runs') ?? 30);
  const given = option(args, 'bin');
  const scratch = given === undefined ? scratchDirectory('startup') : undefined;
  try {
    const bin = given !== undefined ? resolve(given) : join(scratch?.path ?? '', 'bin');
    if (given === undefined) execFileSync(process.execPath, [join(ROOT, 'scripts', 'bundle-cli.mjs'), bin]);
    const palisade = join(bin, 'palisade.js');
    const cases: { id: string; label: string; args: string[]; target?: string }[] = [
      { id: 'startup.node', label: 'node -e 0', args: ['-e', '0'] },
      {
        id: 'startup.version',
        label: 'palisade --version',
        args: [palisade, '--version'],
        target: '≤ 100 ms',
      },
      {
        id: 'startup.shop-matrix',
        label: 'palisade matrix -f examples/shop',
        args: [palisade, 'matrix', '-f', 'examples/shop'],
        target: '≤ 300 ms',
      },
    ];
    const before = loadavg();
    const samples = cases.map(() => [] as Sample[]);
    for (const c of cases) sample(c.args); // warm the file cache
    for (let run = 0; run < runs; run++) cases.forEach((c, i) => samples[i]?.push(sample(c.args)));
    const after = loadavg();
    process.stdout.write(
      `${runs} runs each, in turn; load average ${before.map((l) => l.toFixed(1)).join(' ')} before, ${after.map((l) => l.toFixed(1)).join(' ')} after\n`,
    );
    cases.forEach((c, i) => {
      const list = samples[i] ?? [];
      const [q1, wall, q3] = quartiles(list.map((s) => s.wallMs));
      const cpuMs = list.every((s) => s.cpuMs !== undefined)
        ? median(list.map((s) => s.cpuMs as number))
        : undefined;
      const cpu = cpuMs === undefined ? '' : `; CPU median ${cpuMs.toFixed(0)} ms`;
      reportFigure({
        id: c.id,
        name: `${c.label}, wall`,
        value: wall,
        unit: 'ms',
        runs: list.map((s) => s.wallMs),
        ...(c.target ? { target: c.target } : {}),
      });
      if (cpuMs !== undefined)
        reportFigure({ id: `${c.id}.cpu`, name: `${c.label}, CPU`, value: cpuMs, unit: 'ms' });
      process.stdout.write(
        `${c.label.padEnd(34)} wall median ${wall.toFixed(0)} ms (quartiles ${q1.toFixed(0)}–${q3.toFixed(0)})${cpu}\n`,
      );
    });
  } finally {
    scratch?.remove();
  }
}
