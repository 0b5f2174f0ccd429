// `npm test`: the type check, the lint and every test file, run at the same time rather than one
// after another — the test files themselves several at once (node --test --test-concurrency):
// many of them wait on the kernel, the lab's probes or child processes more than they compute.
// Test output streams as it comes; the type check's and the lint's are printed when they end.
// The type check and the lint run at a lower CPU priority (nice 10) than the tests.
// The Neutron files (by name) and the agent fault suites run one after another beside the others.
// Exits non-zero when any part fails, after all have ended.
//
// The test files run compiled (scripts/build-tests.mjs: one esbuild pass over all of them, ~1 s)
// rather than through tsx, which cost each test process 0.5–1.9 s of CPU before its first test.
//
// Knobs: PALISADE_TEST_CONCURRENCY (test files at once; default: cores + 1),
// PALISADE_PROPERTY_RUNS (fast-check runs of the property tests; test/helpers/property-runs.ts),
// PALISADE_TEST_TSX=1 (run the test files through tsx, as `node --import tsx --test FILE` does),
// PALISADE_TEST_TIMES=1 (at the end, the CPU seconds of each test file: scripts/test-times.mjs).
// Extra arguments are test files to run instead of all (the type check and lint still run).
//
// Selecting by need: a test file's name says what it needs besides Node (scripts/test-needs.mjs;
// test/test-names.test.ts holds the names true) — `x.root.test.ts` root (network namespaces,
// nftables, BPF), `x.etcd.test.ts` a real etcd, `x.neutron.test.ts` a neutron-server,
// `x.browser.test.ts` headless Chromium, and several at once (`x.etcd.root.test.ts`).
//   npm test -- --without root,neutron   every file that needs neither
//   npm test -- --only browser           only the files that need Chromium
//   npm test -- --only etcd --without root
// With no selection every test file runs (what .ci/run does). For the edit loop see
// scripts/test-quick.mjs (`npm run test:quick`).
import process from 'node:process';
import { availableParallelism } from 'node:os';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { buildTests } from './build-tests.mjs';
import { runJob } from './jobs.mjs';
import { NEEDS, needsOfName, parseNeedOptions, selectedByNeeds } from './test-needs.mjs';

const root = resolve(import.meta.dirname, '..');
const bin = (pkg, file) => join(root, 'node_modules', pkg, file);

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

/**
 * The test files that take longest (wall time, measured file by file; docs/BENCHMARKS.md), started
 * first: most of their time is waiting (the verifier loading the eBPF lab's programs, the agent
 * fault trials' 10 and 30 s outages), which overlaps the type check and the lint; started in
 * alphabetical order, the eBPF lab suite ran on alone for minutes after everything else ended.
 */
const LONGEST_FIRST = [
  'test/ebpf/lab-suite.root.test.ts',
  'test/agent/faults-nftables.etcd.root.test.ts',
  'test/agent/faults-ebpf.etcd.root.test.ts',
  'test/ebpf/lab.root.test.ts',
  'test/ebpf/program.root.test.ts',
  'test/ingest/hostile-input.test.ts',
  'test/compiler/renderer-cache.test.ts',
  'test/classifier/classifier.test.ts',
  'test/lab/anp-conformance.root.test.ts',
  'test/conformance/netpol-analyzer.test.ts',
  'test/lab/faults.root.test.ts',
  'test/lab/lab.root.test.ts',
];

/**
 * Test files that run one after another, in one lane beside the other files (at
 * most `concurrency - 1` at once). The files that start a neutron-server (every `*.neutron.test.ts`
 * joins the lane by its name; Python, seconds of CPU
 * to import before it answers): three starting at once on a fresh CI machine took more than 90 s
 * to answer. The agent fault suites, each starting etcd, agents, a reflector and a prober in
 * network namespaces and holding deadlines on their convergence: started together (with the type
 * check and the lint) they pushed a two-core machine's load past 50 and their trials past those
 * deadlines. One lane for both: with a lane each, a clean-clone rehearsal's load reached 50 and
 * the other files took 29 minutes (13 the run before). (`node --test` runs them in the order of
 * their paths.)
 */
const ONE_AT_A_TIME = [
  'test/agent/faults-ebpf.etcd.root.test.ts',
  'test/agent/faults-nftables.etcd.root.test.ts',
];
const inLane = (file) => ONE_AT_A_TIME.includes(file) || needsOfName(file).includes('neutron');

const concurrency = Number(process.env.PALISADE_TEST_CONCURRENCY ?? availableParallelism() + 1);
const rank = (file) => (LONGEST_FIRST.includes(file) ? LONGEST_FIRST.indexOf(file) : LONGEST_FIRST.length);
let selection;
try {
  selection = parseNeedOptions(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`npm test: ${error.message}\n`);
  process.exit(2);
}
const files = (
  selection.rest.length > 0
    ? selection.rest.map((file) => relative(root, resolve(file)))
    : [...testFiles(join(root, 'src')), ...testFiles(join(root, 'test'))]
        .sort()
        .sort((a, b) => rank(a) - rank(b))
).filter((file) => selectedByNeeds(file, selection));
if (selection.only !== undefined || selection.without.length > 0) {
  const needs = (list) => list.map((need) => `${need} (${NEEDS[need]})`).join(', ');
  process.stdout.write(
    `── ${files.length} test files selected` +
      (selection.only ? `: those needing ${needs(selection.only)}` : '') +
      (selection.without.length > 0 ? `; none needing ${needs(selection.without)}` : '') +
      '\n',
  );
}

const node = process.execPath;
const job = (name, commands, options) => runJob(root, name, commands, options);
// The executable and the lab's pod agent, bundled once for every test that starts them as
// processes (test/helpers/executable.ts): from the sources, tsx would compile them in each.
// Inside node_modules, so the bundle finds the packages it leaves external (koffi) as dist/bin does.
mkdirSync(join(root, 'node_modules', '.cache'), { recursive: true });
const bundleDir = mkdtempSync(join(root, 'node_modules', '.cache', `palisade-test-bundle-${process.pid}-`));
const bundled = await job('bundle', [[node, join(root, 'scripts', 'bundle-cli.mjs'), bundleDir]]);
if (bundled.code !== 0) process.exit(bundled.code);
process.env.PALISADE_BUNDLE_DIR = bundleDir;

const tsx = process.env.PALISADE_TEST_TSX === '1';
/** Each test file as node runs it: the source (under tsx) or its compiled module. */
let runnable = new Map(files.map((file) => [file, file]));
let testArgv = ['--import', 'tsx'];
if (!tsx) {
  const started = Date.now();
  try {
    const compiled = await buildTests(files, join(bundleDir, 'tests'));
    runnable = new Map(files.map((file, i) => [file, compiled[i]]));
    testArgv = ['--enable-source-maps'];
  } catch (error) {
    process.stdout.write(`\n── compiling the test files: failed\n${String(error)}\n`);
    rmSync(bundleDir, { recursive: true, force: true });
    process.exit(1);
  }
  process.stdout.write(`── test files compiled (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}
const timesFile = join(bundleDir, 'times.jsonl');
if (process.env.PALISADE_TEST_TIMES === '1') {
  testArgv = ['--import', join(root, 'scripts', 'test-times.mjs'), ...testArgv];
  process.env.PALISADE_TEST_TIMES_FILE = timesFile;
}
const results = await Promise.all([
  job(
    'typecheck',
    [
      [node, bin('typescript', 'bin/tsc'), '-p', 'tsconfig.json', '--noEmit'],
      [node, bin('typescript', 'bin/tsc'), '-p', 'web/tsconfig.json'],
    ],
    { niceness: 10 },
  ),
  job(
    'lint',
    [
      [node, bin('eslint', 'bin/eslint.js'), '.'],
      [node, bin('prettier', 'bin/prettier.cjs'), '--check', '--log-level', 'warn', '.'],
    ],
    { niceness: 10 },
  ),
  ...testLanes(),
]);
process.stdout.write(failuresAgain(results));
process.stdout.write(
  `\n${results.map((r) => `${r.name}: ${r.code === 0 ? 'ok' : 'FAILED'} (${r.seconds} s)`).join('; ')}\n`,
);
if (existsSync(timesFile)) process.stdout.write(timesReport(readFileSync(timesFile, 'utf8')));
rmSync(bundleDir, { recursive: true, force: true });
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;

/**
 * The test files as `node --test` runs: those of ONE_AT_A_TIME one after another (their output
 * printed when the lane ends), the others `concurrency - 1` at once beside them,
 * streamed.
 */
function testLanes() {
  const rest = files.filter((file) => !inLane(file));
  const serial = files.filter(inLane).sort();
  const run = (name, list, parallel, stream) =>
    job(
      name,
      [
        [
          node,
          '--test',
          `--test-concurrency=${parallel}`,
          '--test-reporter=spec',
          ...testArgv,
          ...list.map((file) => runnable.get(file)),
        ],
      ],
      { stream },
    );
  if (serial.length === 0) return [run('tests', rest, concurrency, true)];
  if (rest.length === 0) return [run('tests', serial, 1, true)];
  return [
    run('tests', rest, Math.max(1, concurrency - 1), true),
    run('tests (one at a time)', serial, 1, false),
  ];
}

/**
 * The failures of a kept (not streamed) job, printed again at the very end: the one-at-a-time
 * lane prints its output when it ends, and the streamed lane can go on for minutes after it, so
 * a CI log's tail showed which test failed and not why. Node's spec reporter ends a failing run
 * with a "failing tests:" section holding each failure's message and stack.
 */
function failuresAgain(results) {
  return results
    .filter((r) => r.code !== 0 && r.output)
    .map((r) => {
      const at = r.output.lastIndexOf('\u2716 failing tests:');
      return `\n── ${r.name}: failed\n${at === -1 ? r.output.slice(-4000) : r.output.slice(at)}`;
    })
    .join('');
}

/** The test files by CPU seconds, most first (PALISADE_TEST_TIMES=1), and their sum. */
function timesReport(jsonLines) {
  const rows = jsonLines
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .map((r) => ({
      ...r,
      cpu: r.self + r.children,
      // Compiled files by their sources' paths (under tsx they are the sources).
      file: relative(tsx ? root : join(bundleDir, 'tests'), r.file).replace(/\.mjs$/, '.ts'),
    }))
    .sort((a, b) => b.cpu - a.cpu);
  const total = rows.reduce((sum, r) => sum + r.cpu, 0);
  const lines = rows.map(
    (r) =>
      `${r.cpu.toFixed(1).padStart(7)} ${r.self.toFixed(1).padStart(7)} ${r.children.toFixed(1).padStart(8)} ${r.wall.toFixed(1).padStart(7)}  ${r.file}`,
  );
  return `\n── CPU seconds per test file (${rows.length} files, ${total.toFixed(1)} s in all)\n    cpu    self children    wall  file\n${lines.join('\n')}\n`;
}
