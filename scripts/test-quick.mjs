// `npm run test:quick`: the edit loop — what changed, checked in well under a minute, where
// `npm test` (scripts/test.mjs) checks everything in minutes. What changed is every file that
// differs from where the branch left main (committed or not, `--base REF` for another start)
// plus the untracked ones. Three jobs, at once:
//
// - the type check, incremental: tsc keeps what it learnt in node_modules/.cache/palisade/
//   (a .tsbuildinfo per project; the page's project only when web/ changed);
// - the lint of the changed files only: eslint --cache and prettier --cache (both caches under
//   node_modules/.cache/), so an unchanged file costs a stat;
// - the tests of what changed: the changed test files, and every test file that imports a changed
//   module, directly or through others (src/ and test/ helpers alike); a test file that names a
//   changed file that is not a module (a doc, an example, a fixture) by its path; with nothing
//   mapped, a fast subset (the unit tests beside the code, the architecture, names and doc-link
//   tests). Test files that need root, etcd, a neutron-server or Chromium (their names say so:
//   scripts/test-needs.mjs) are left out unless asked: `--with root,etcd` lets those in,
//   `--only browser` keeps only those.
//
// At most 24 test files run, the nearest to the change by imports (a change to src/net/ reaches
// nearly every test); `--all` runs every one it reaches.
//
// Usage: npm run test:quick [-- --base REF] [--with NEEDS] [--only NEEDS] [--all] [--list] [FILE…]
//   FILE…    test these files (as well as what changed maps to)
//   --list   say what would run, and run nothing
// Knobs: PALISADE_TEST_CONCURRENCY (test files at once; default: cores), PALISADE_PROPERTY_RUNS.
import process from 'node:process';
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { buildTests } from './build-tests.mjs';
import { runJob } from './jobs.mjs';
import { NEEDS, needsOfName, parseNeedOptions } from './test-needs.mjs';
import { dependencies, moduleUses, reachedBy, sourceFiles } from './test-map.mjs';

const root = resolve(import.meta.dirname, '..');
const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
const cache = join(root, 'node_modules', '.cache', 'palisade');
const node = process.execPath;

/** The unit tests beside the code and the tests of the project's own shape: run when nothing maps. */
const FAST_SUBSET = ['test/architecture.test.ts', 'test/test-names.test.ts', 'test/doc-links.test.ts'];

/**
 * At most this many test files, the nearest to the change (a change to a module every layer uses
 * reaches nearly all of them; `--all` runs every one it reaches).
 */
const MAX_FILES = 24;

const started = Date.now();
const options = readOptions(process.argv.slice(2));
const changed = changedFiles(options.base);
const tests = testsFor(changed, options);
process.stdout.write(
  `── ${changed.length} changed file${changed.length === 1 ? '' : 's'} since ${options.base}; ${tests.files.length} test files` +
    (tests.mapped ? '' : ' (nothing maps: the fast subset)') +
    (tests.beyondLimit.length > 0 ? `; ${tests.beyondLimit.length} more reach it (--all runs them)` : '') +
    (tests.leftOut.length > 0
      ? `; left out, needing ${tests.leftOutNeeds.join(', ')}: ${tests.leftOut.length}`
      : '') +
    '\n',
);
if (options.list) {
  for (const file of tests.files) process.stdout.write(`  ${file}\n`);
  for (const file of tests.beyondLimit) process.stdout.write(`  (beyond the limit) ${file}\n`);
  for (const file of tests.leftOut) process.stdout.write(`  (left out) ${file}\n`);
  process.exit(0);
}
mkdirSync(cache, { recursive: true });
const results = await Promise.all([typecheck(changed), lint(changed), runTests(tests.files)]);
process.stdout.write(
  `\n${results.map((r) => `${r.name}: ${r.code === 0 ? 'ok' : 'FAILED'} (${r.seconds} s)`).join('; ')}` +
    ` — ${((Date.now() - started) / 1000).toFixed(0)} s in all\n`,
);
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;

function readOptions(args) {
  let base;
  let list = false;
  let all = false;
  const rest = [];
  const withNeeds = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--base') base = args[++i];
    else if (args[i]?.startsWith('--base=')) base = args[i].slice('--base='.length);
    else if (args[i] === '--list') list = true;
    else if (args[i] === '--all') all = true;
    else if (args[i] === '--with') withNeeds.push(...(args[++i] ?? '').split(',').filter(Boolean));
    else if (args[i]?.startsWith('--with=')) withNeeds.push(...args[i].slice(7).split(',').filter(Boolean));
    else rest.push(args[i]);
  }
  let needs;
  try {
    needs = parseNeedOptions(rest);
    for (const need of withNeeds)
      if (!Object.hasOwn(NEEDS, need))
        throw new Error(`unknown need '${need}' in --with: one of ${Object.keys(NEEDS).join(', ')}`);
  } catch (error) {
    process.stderr.write(`test:quick: ${error.message}\n`);
    process.exit(2);
  }
  // Left out unless asked: every need not let in with --with or asked for with --only.
  const asked = new Set([...withNeeds, ...(needs.only ?? [])]);
  const without = [...new Set([...needs.without, ...Object.keys(NEEDS).filter((need) => !asked.has(need))])];
  return {
    base: base ?? defaultBase(),
    list,
    all,
    only: needs.only,
    without,
    files: needs.rest.map((file) => relative(root, resolve(file))),
  };
}

function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

/** Where the branch left main (on main itself: HEAD, so what is not committed yet), else HEAD. */
function defaultBase() {
  try {
    return git('merge-base', 'main', 'HEAD').trim();
  } catch {
    return 'HEAD';
  }
}

/** Files that differ from `base` (committed, staged or not) and untracked ones, that exist now. */
function changedFiles(base) {
  const lines = (text) => text.split('\n').filter(Boolean);
  let differing;
  try {
    differing = lines(git('diff', '--name-only', base));
  } catch {
    process.stderr.write(`test:quick: git cannot compare with '${base}'\n`);
    process.exit(2);
  }
  const untracked = lines(git('ls-files', '--others', '--exclude-standard'));
  return [...new Set([...differing, ...untracked])].filter((file) => existsSync(join(root, file))).sort();
}

/** The test files to run for `changed`, and those left out for what they need. */
function testsFor(changed, { only, without, files: named, all }) {
  const modules = ['src', 'test', 'scripts', 'eslint-rules'].flatMap((dir) => sourceFiles(root, dir));
  const allTests = modules.filter((file) => file.endsWith('.test.ts')).sort();
  const graph = dependencies(moduleUses(root, modules));
  const changedSet = new Set(changed);
  /** How near a test file is to a changed module it runs (imports away; Infinity: it runs none). */
  const distance = new Map(
    allTests.map((file) => {
      const depths = [...reachedBy(root, file, graph)].filter(([module]) => changedSet.has(module));
      return [file, Math.min(...depths.map(([, depth]) => depth))];
    }),
  );
  const reachesChange = (file) => distance.get(file) < Infinity;
  // Files that are not modules (docs, examples, fixtures, goldens) reach the tests that name them.
  const others = changed.filter((file) => !/\.(ts|mjs|js)$/.test(file));
  const names = (file) => {
    const text = readFileSync(join(root, file), 'utf8');
    return others.some((other) => {
      const parent = dirname(other);
      return (
        text.includes(other) ||
        (other.endsWith('.md') && text.includes(other.split('/').at(-1))) ||
        (/^(examples|test\/fixtures)\//.test(other) && parent !== 'examples' && text.includes(parent))
      );
    });
  };
  const mappedTests = allTests.filter((file) => reachesChange(file) || (others.length > 0 && names(file)));
  const mapped = mappedTests.length > 0 || named.length > 0;
  const candidates = [
    ...new Set([
      ...named,
      ...(mapped ? mappedTests : [...allTests.filter((f) => f.startsWith('src/')), ...FAST_SUBSET]),
    ]),
  ];
  const needed = (file) => needsOfName(file);
  const kept = candidates.filter((file) => {
    const needs = needed(file);
    if (only !== undefined && !needs.some((need) => only.includes(need))) return false;
    return !needs.some((need) => without.includes(need));
  });
  const leftOut = candidates.filter((file) => !kept.includes(file));
  const leftOutNeeds = [...new Set(leftOut.flatMap(needed))].sort();
  // The nearest first (named files, then by imports away from a change); past the limit, the rest wait for npm test.
  const rank = (file) => (named.includes(file) ? -1 : (distance.get(file) ?? Infinity));
  const nearest = kept.sort().sort((a, b) => rank(a) - rank(b));
  const limit = all ? Infinity : MAX_FILES;
  return {
    files: nearest.slice(0, limit).sort(),
    beyondLimit: nearest.slice(limit).sort(),
    leftOut: leftOut.sort(),
    leftOutNeeds,
    mapped,
  };
}

/** A job run in the project's root (scripts/jobs.mjs). */
function job(name, commands, options) {
  return runJob(root, name, commands, options);
}

function typecheck(changed) {
  const tsc = (project, info) => [
    node,
    bin('typescript', 'bin/tsc'),
    '-p',
    project,
    '--noEmit',
    '--incremental',
    '--tsBuildInfoFile',
    join(cache, info),
  ];
  const commands = [tsc('tsconfig.json', 'tsc.tsbuildinfo')];
  if (changed.some((file) => file.startsWith('web/')))
    commands.push(tsc('web/tsconfig.json', 'tsc-web.tsbuildinfo'));
  return job('typecheck (incremental)', commands);
}

function lint(changed) {
  const lintable = changed.filter((file) => /\.(ts|mjs|js|cjs)$/.test(file));
  const commands = [];
  if (lintable.length > 0)
    commands.push([
      node,
      bin('eslint', 'bin/eslint.js'),
      '--cache',
      '--cache-location',
      join(cache, 'eslint/'),
      '--no-warn-ignored',
      ...lintable,
    ]);
  if (changed.length > 0)
    commands.push([
      node,
      bin('prettier', 'bin/prettier.cjs'),
      '--check',
      '--cache',
      '--cache-location',
      join(cache, 'prettier'),
      '--ignore-unknown',
      '--log-level',
      'warn',
      ...changed,
    ]);
  return job(`lint (${lintable.length} files, prettier ${changed.length})`, commands);
}

/** The test files, compiled once (scripts/build-tests.mjs) and run several at once. */
async function runTests(files) {
  if (files.length === 0) return { name: 'tests (none)', code: 0, seconds: '0' };
  const outdir = mkdtempSync(join(cache, `quick-tests-${process.pid}-`));
  try {
    const compiled = await buildTests(files, outdir);
    const concurrency = Number(process.env.PALISADE_TEST_CONCURRENCY ?? availableParallelism());
    return await job(
      `tests (${files.length} files)`,
      [
        [
          node,
          '--test',
          `--test-concurrency=${concurrency}`,
          '--test-reporter=dot',
          '--enable-source-maps',
          ...compiled,
        ],
      ],
      { stream: true },
    );
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
