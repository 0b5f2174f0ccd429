/**
 * `npm run bench -- engines --processes [--rounds 3] [--runs 5] [--scale 0.1] [--policies 10000]`:
 * the engines benchmark with each engine in a process of its own, as a user's command reads one
 * cluster. In one process the three engines share the runtime's optimized code: a function both
 * paths call is optimized for both kinds of object, and every engine's last objects stay in the
 * heap. Here each round starts one process per engine (the order rotating between rounds, so a
 * busy moment of the shared machine weighs on all alike); each runs `--runs` times read, compile
 * and matrix auto, and its first run (the process's warm-up) is left out. CPU time only: the
 * process's own, every thread. Ratios are given of the medians, and paired by round (each
 * engine's median over NetworkPolicy's in the same round).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import type { PolicyEngineName } from '../src/generate/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';

/** How a child's line of figures starts (the rest of its output is its progress). */
export const CHILD_FIGURES = 'engine figures: ';

const ENGINES: readonly PolicyEngineName[] = ['networkpolicy', 'calico', 'cilium'];
const LABEL: Record<PolicyEngineName, string> = {
  networkpolicy: 'NetworkPolicy',
  calico: 'Calico',
  cilium: 'Cilium',
};
const STEPS = ['read', 'compile', 'matrix auto'] as const;
type Step = (typeof STEPS)[number];

interface ChildFigures {
  readonly cpu: Record<Step, number[]>;
  readonly load: number;
}

export function enginesInProcesses(args: string[]): void {
  const rounds = numberOption(args, 'rounds', 3);
  const runs = numberOption(args, 'runs', 5);
  if (runs < 2) throw new Error('--processes needs --runs 2 or more: each process leaves its first run out');
  // The child is this benchmark again, for one engine, with the same runtime flags (--expose-gc).
  const passed = ['scale', 'policies'].flatMap((name) =>
    args.includes(`--${name}`) ? [`--${name}`, args[args.indexOf(`--${name}`) + 1] as string] : [],
  );
  const childArgs = (engine: PolicyEngineName): string[] => [
    ...process.execArgv,
    process.argv[1] as string,
    'engines',
    '--engine',
    engine,
    '--runs',
    String(runs),
    '--matrix-runs',
    '0',
    ...passed,
  ];
  /** Per engine and step, each round's median (first run left out). */
  const byRound: Record<PolicyEngineName, Record<Step, number[]>> = {
    networkpolicy: { read: [], compile: [], 'matrix auto': [] },
    calico: { read: [], compile: [], 'matrix auto': [] },
    cilium: { read: [], compile: [], 'matrix auto': [] },
  };
  const loads: number[] = [];
  process.stdout.write(
    `engines in processes of their own: ${rounds} round${rounds === 1 ? '' : 's'} of ${runs} runs each; load ${loadavg()[0]?.toFixed(1)}\n`,
  );
  for (let round = 0; round < rounds; round++) {
    const order = ENGINES.map((_, i) => ENGINES[(i + round) % ENGINES.length] as PolicyEngineName);
    for (const engine of order) {
      const figures = runChild(childArgs(engine), engine);
      loads.push(figures.load);
      for (const step of STEPS) byRound[engine][step].push(median(figures.cpu[step].slice(1)));
      process.stdout.write(
        `  round ${round + 1}: ${LABEL[engine]} ${STEPS.map((step) => `${step} ${(median(figures.cpu[step].slice(1)) / 1000).toFixed(2)} s`).join(', ')} CPU (load ${figures.load.toFixed(1)})\n`,
      );
    }
  }
  for (const step of STEPS) {
    const np = median(byRound.networkpolicy[step]);
    for (const engine of ENGINES) {
      const values = byRound[engine][step];
      const value = median(values);
      reportFigure({
        name: `engines ×${option(args, 'scale', '0.1')}, ${option(args, 'policies', '10000')} ${LABEL[engine]} policies, one process each: ${step} CPU`,
        value: value / 1000,
        unit: 's',
        runs: values.map((v) => v / 1000),
        ...(engine !== 'networkpolicy' ? { target: '≤ the NetworkPolicies’' } : {}),
      });
      const ratios = values.map((v, round) => v / (byRound.networkpolicy[step][round] as number));
      process.stdout.write(
        `${`${step} cpu`.padEnd(16)} ${LABEL[engine].padEnd(14)} ${(value / 1000).toFixed(2)} s (median of ${values.length} round${values.length === 1 ? '' : 's'}: ${values.map((v) => (v / 1000).toFixed(2)).join(', ')})${
          engine === 'networkpolicy'
            ? ''
            : `, ×${(value / np).toFixed(2)} the NetworkPolicies'; paired by round ×${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
        }\n`,
      );
    }
  }
  process.stdout.write(
    `load average during the runs: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}\n`,
  );
}

/** One child's figures; its output is shown when it fails. */
function runChild(argv: string[], engine: PolicyEngineName): ChildFigures {
  const child = spawnSync(process.execPath, argv, { encoding: 'utf8', maxBuffer: 16 << 20 });
  const line = child.stdout.split('\n').find((l) => l.startsWith(CHILD_FIGURES));
  if (child.status !== 0 || !line)
    throw new Error(
      `the ${engine} process failed (${child.status ?? child.signal}):\n${child.stdout}${child.stderr}`,
    );
  return JSON.parse(line.slice(CHILD_FIGURES.length)) as ChildFigures;
}

function numberOption(args: string[], name: string, fallback: number): number {
  return Number(option(args, name, String(fallback)));
}

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] as string) : fallback;
}
