/**
 * `npm run bench -- matrix [--namespaces N --pods-per-namespace N --policies-per-namespace N --runs N]`:
 * a full single-port matrix of a synthetic cluster (default 2,000 pods in 50 namespaces with
 * 500 policies), timed from the loaded cluster to every pair's answer.
 */
import { spawnSync } from 'node:child_process';
import { computeMatrix } from '../src/analysis/matrix.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromTexts } from '../src/ingest/load.ts';
import { median, ms, timeRuns } from './stats.ts';
import { reportFigure } from './report.ts';
import { syntheticCluster } from './synthetic-cluster.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

export function matrixBenchmark(args: string[]): void {
  if (args.includes('--shape-b')) return shapeBMatrix(args, option(args, 'runs', 3));
  const naive = args.includes('--naive');
  const namespaces = option(args, 'namespaces', 50);
  const pods = option(args, 'pods-per-namespace', 40);
  const policies = option(args, 'policies-per-namespace', 10);
  const runs = option(args, 'runs', 5);
  const objects = syntheticCluster({ namespaces, podsPerNamespace: pods, policiesPerNamespace: policies });
  const text = objects.map((o) => JSON.stringify(o)).join('\n---\n');
  const load = timeRuns(3, () => loadFromTexts([{ name: 'synthetic.yaml', text }]));
  const { cluster, diagnostics } = load.result;
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length) throw new Error(`synthetic cluster has errors: ${errors[0]?.message}`);
  const endpoints = cluster.endpoints.length;
  process.stdout.write(
    `cluster: ${endpoints} pods, ${cluster.namespaces.size} namespaces, ${cluster.policies.length} policies ` +
      `(${(text.length / 1024 / 1024).toFixed(1)} MiB of manifests, parsed and validated in ${ms(median(load.millis))})\n`,
  );
  for (const [id, label, queries] of [
    ['matrix.tcp8000', 'single-port matrix TCP/8000', [{ port: 8000, protocol: 'TCP' as const }]],
    ['matrix.named-port', 'single-port matrix named port http', [{ port: 'http', protocol: 'TCP' as const }]],
    ['matrix.port-sets', 'allowed-port-set matrix (no port)', []],
  ] as const) {
    const timed = timeRuns(runs, () => computeMatrix(cluster, { queries }));
    const stats = timed.result.stats;
    reportFigure({
      id,
      name: `matrix 2,000 pods: ${label}`,
      value: median(timed.millis),
      unit: 'ms',
      runs: timed.millis,
      ...(label.includes('8000') ? { target: '≤ 5 s' } : {}),
    });
    process.stdout.write(
      `${label}: median ${ms(median(timed.millis))} over ${runs} runs ` +
        `(min ${ms(timed.millis.reduce((a, b) => Math.min(a, b)))}, max ${ms(timed.millis.reduce((a, b) => Math.max(a, b)))}); ` +
        `${(endpoints * endpoints).toLocaleString('en-US')} pairs, ${stats.classes} classes, ${stats.evaluations.toLocaleString('en-US')} evaluations\n`,
    );
  }
  if (naive) {
    // The same single-port matrix evaluating every pair, to show what the classes save.
    const timed = timeRuns(1, () =>
      computeMatrix(cluster, { queries: [{ port: 8000, protocol: 'TCP' }], useClasses: false }),
    );
    process.stdout.write(
      `single-port matrix TCP/8000 without classes: ${ms(timed.millis[0] ?? 0)} (1 run, ${timed.result.stats.evaluations.toLocaleString('en-US')} evaluations)\n`,
    ); // And through the compiled classifier (built inside each run), every pair too.
    const compiled = timeRuns(runs, () =>
      computeMatrix(cluster, {
        queries: [{ port: 8000, protocol: 'TCP' }],
        useClasses: false,
        engine: 'compiled',
      }),
    );
    process.stdout.write(
      `single-port matrix TCP/8000 without classes, --engine compiled: median ${ms(median(compiled.millis))} over ${runs} runs\n`,
    );
    const compiledClasses = timeRuns(runs, () =>
      computeMatrix(cluster, { queries: [{ port: 8000, protocol: 'TCP' }], engine: 'compiled' }),
    );
    process.stdout.write(
      `single-port matrix TCP/8000 with classes, --engine compiled: median ${ms(median(compiledClasses.millis))} over ${runs} runs\n`,
    );
  }
}

/**
 * The full single-port matrix of the compiler issue's shape (b): 10,000 pods, 100 million
 * ordered pairs, every cell read back; with each engine (the compiled one builds its classifier
 * inside the run). Each engine runs in a process of its own: in one process the second engine's
 * read-back loop ran on code the first had optimized for the other engine's matrix, and measured
 * about twice as slow whichever came second.
 */
function shapeBMatrix(args: string[], runs: number): void {
  const only = args[args.indexOf('--engine') + 1];
  if (!args.includes('--engine')) {
    for (const engine of ['reference', 'compiled']) {
      const child = spawnSync(
        process.execPath,
        [
          ...process.execArgv,
          process.argv[1] as string,
          'matrix',
          '--shape-b',
          '--engine',
          engine,
          '--runs',
          String(runs),
        ],
        { stdio: 'inherit' },
      );
      if (child.status !== 0) throw new Error(`matrix --shape-b --engine ${engine} exited ${child.status}`);
    }
    return;
  }
  if (only !== 'reference' && only !== 'compiled')
    throw new Error(`--engine: reference or compiled, not ${only}`);
  const generated = generateShape('b', { scale: 1, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  const engine = only;
  const timed = timeRuns(runs, () => {
    const matrix = computeMatrix(cluster, { queries: [{ port: 1000, protocol: 'TCP' }], engine });
    let allowed = 0;
    const n = matrix.endpoints.length;
    for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) if (matrix.allowed(a, b, 0)) allowed++;
    return { matrix, allowed };
  });
  const { matrix, allowed } = timed.result;
  reportFigure({
    id: `matrix.shape-b.${engine}`,
    name: `matrix shape b, TCP/1000, --engine ${engine} (every cell read)`,
    value: median(timed.millis),
    unit: 'ms',
    runs: timed.millis,
    target: '≤ 20 s',
  });
  process.stdout.write(
    `shape b, TCP/1000, --engine ${engine}: median ${ms(median(timed.millis))} over ${timed.millis.length} runs; ` +
      `${(matrix.endpoints.length ** 2).toLocaleString('en-US')} pairs read, ${allowed} allowed, ${matrix.stats.classes} classes\n`,
  );
}
