// `npm test`: the type check, the lint and every test file, run at the same time rather than one
// after another — the test files themselves several at once (node --test --test-concurrency):
// many of them wait on the kernel, the lab's probes or child processes more than they compute.
// Test output streams as it comes; the type check's and the lint's are printed when they end.
// Exits non-zero when any part fails, after all have ended.
//
// Knobs: PALISADE_TEST_CONCURRENCY (test files at once; default: cores + 1),
// PALISADE_PROPERTY_RUNS (fast-check runs of the property tests; test/helpers/property-runs.ts).
// Extra arguments are test files to run instead of all (the type check and lint still run).
import process from 'node:process';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const bin = (pkg, file) => join(root, 'node_modules', pkg, file);

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

const concurrency = Number(process.env.PALISADE_TEST_CONCURRENCY ?? availableParallelism() + 1);
const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : [...testFiles(join(root, 'src')), ...testFiles(join(root, 'test'))].sort();

/** Runs commands one after another; resolves with the first failing exit code (or 0) and the time. */
function job(name, commands, { stream = false } = {}) {
  const started = Date.now();
  let output = '';
  const runNext = async (index) => {
    if (index >= commands.length) return 0;
    const [command, ...args] = commands[index];
    const code = await new Promise((done) => {
      const child = spawn(command, args, {
        cwd: root,
        stdio: ['ignore', stream ? 'inherit' : 'pipe', stream ? 'inherit' : 'pipe'],
      });
      child.stdout?.on('data', (chunk) => (output += chunk));
      child.stderr?.on('data', (chunk) => (output += chunk));
      child.on('close', (status, signal) => done(status ?? (signal ? 1 : 0)));
    });
    return code === 0 ? runNext(index + 1) : code;
  };
  return runNext(0).then((code) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    if (!stream || output)
      process.stdout.write(
        `\n── ${name} (${seconds} s): ${code === 0 ? 'ok' : `failed (${code})`}\n${output}`,
      );
    return { name, code, seconds };
  });
}

const node = process.execPath;
// The executable and the lab's pod agent, bundled once for every test that starts them as
// processes (test/helpers/executable.ts): from the sources, tsx would compile them in each.
// Inside node_modules, so the bundle finds the packages it leaves external (koffi) as dist/bin does.
mkdirSync(join(root, 'node_modules', '.cache'), { recursive: true });
const bundleDir = mkdtempSync(join(root, 'node_modules', '.cache', `palisade-test-bundle-${process.pid}-`));
const bundled = await job('bundle', [[node, join(root, 'scripts', 'bundle-cli.mjs'), bundleDir]]);
if (bundled.code !== 0) process.exit(bundled.code);
process.env.PALISADE_BUNDLE_DIR = bundleDir;
const results = await Promise.all([
  job('typecheck', [
    [node, bin('typescript', 'bin/tsc'), '-p', 'tsconfig.json', '--noEmit'],
    [node, bin('typescript', 'bin/tsc'), '-p', 'web/tsconfig.json'],
  ]),
  job('lint', [
    [node, bin('eslint', 'bin/eslint.js'), '.'],
    [node, bin('prettier', 'bin/prettier.cjs'), '--check', '--log-level', 'warn', '.'],
  ]),
  job(
    'tests',
    [
      [
        node,
        '--import',
        'tsx',
        '--test',
        `--test-concurrency=${concurrency}`,
        '--test-reporter=spec',
        ...files,
      ],
    ],
    { stream: true },
  ),
]);
process.stdout.write(
  `\n${results.map((r) => `${r.name}: ${r.code === 0 ? 'ok' : 'FAILED'} (${r.seconds} s)`).join('; ')}\n`,
);
rmSync(bundleDir, { recursive: true, force: true });
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
