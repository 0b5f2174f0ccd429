// Which modules a test file runs, for `npm run test:quick` (scripts/test-quick.mjs) to find the
// tests a change reaches: the project's modules and what each uses of the others.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Modules started as processes rather than imported: a test that starts `palisade` runs the CLI's
 * modules (test/helpers/executable.ts names the entry point by its path).
 */
const PROCESS_ENTRIES = new Map([['test/helpers/executable.ts', ['src/cli/main.ts']]]);

/**
 * The CLI loads a command's module only when that command runs (src/cli/program.ts), so a test
 * reaches a command's module only if it names the command (`'lint'`).
 */
const PROGRAM = 'src/cli/program.ts';

/** The modules (.ts, .mjs, .js) under `dir`, relative to `root`. */
export function sourceFiles(root, dir) {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(root, path);
    return /\.(ts|mjs|js)$/.test(name) ? [path] : [];
  });
}

/**
 * What each module uses of others, for finding the tests a change reaches. Type-only imports are
 * left out (the type check covers them); a named import from a module that re-exports the name
 * (a layer's index.ts) is followed to the module that defines it, so a test importing one
 * function from a layer's index is not taken to depend on the whole layer.
 */
export function moduleUses(root, files) {
  const modules = new Map();
  const target = (file, specifier) => relative(root, resolve(dirname(join(root, file)), specifier));
  const valueNames = (list) =>
    list
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '' && !part.startsWith('type '))
      .map((part) => part.split(/\s+as\s+/));
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    const whole = new Set(); // modules used whole: side-effect, namespace, default and dynamic imports
    const named = []; // [module, name] pairs
    const reExports = new Map(); // exported name → [module, its name there]
    const stars = [];
    for (const m of text.matchAll(/^(import|export)\s+(type\s+)?([^;'"]*?)\s*from\s+'(\.[^']+)'/gm)) {
      const [, kind, typeOnly, clause, specifier] = m;
      if (typeOnly) continue;
      const module = target(file, specifier);
      const braces = /\{([\s\S]*)\}/.exec(clause);
      if (kind === 'export') {
        if (clause.startsWith('*')) stars.push(module);
        else if (braces)
          for (const [name, as] of valueNames(braces[1])) reExports.set(as ?? name, [module, name]);
        continue;
      }
      const outside = braces ? clause.replace(braces[0], '') : clause;
      if (/[\w$*]/.test(outside.replace(/,/g, ''))) whole.add(module);
      if (braces) for (const [name] of valueNames(braces[1])) named.push([module, name]);
    }
    for (const m of text.matchAll(/^import\s+'(\.[^']+)'|\bimport\s*\(\s*'(\.[^']+)'/gm))
      whole.add(target(file, m[1] ?? m[2]));
    for (const entry of PROCESS_ENTRIES.get(file) ?? []) whole.add(entry);
    const commands = new Map(); // command module → the command names that load it
    if (file === PROGRAM)
      for (const m of text.matchAll(/name:\s*'([\w-]+)',\s*load:[^\n]*?import\(\s*'(\.[^']+)'/g)) {
        const module = target(file, m[2]);
        whole.delete(module);
        commands.set(module, [...(commands.get(module) ?? []), m[1]]);
      }
    modules.set(file, { whole, named, reExports, stars, commands });
  }
  return modules;
}

/** The modules a module's code runs: its own, and what it uses, through re-exports to definitions. */
export function dependencies(modules) {
  const defining = (module, name, seen = new Set()) => {
    const info = modules.get(module);
    if (!info || seen.has(module)) return [module];
    seen.add(module);
    const reExported = info.reExports.get(name);
    if (reExported) return defining(reExported[0], reExported[1], seen);
    if (info.stars.length > 0) return [module, ...info.stars.flatMap((star) => defining(star, name, seen))];
    return [module];
  };
  const edges = new Map();
  for (const [file, info] of modules) {
    const uses = new Set();
    for (const module of info.whole) {
      uses.add(module);
      // Used whole: everything it re-exports runs too.
      const re = modules.get(module);
      if (re) for (const [m] of [...re.reExports.values(), ...re.stars.map((s) => [s])]) uses.add(m);
    }
    for (const [module, name] of info.named) for (const used of defining(module, name)) uses.add(used);
    edges.set(file, uses);
  }
  return { edges, commands: modules.get(PROGRAM)?.commands ?? new Map() };
}

/**
 * The modules a test file runs (itself included), each with how many imports away it is: what it
 * uses, transitively, with the CLI's command modules only for the commands its text names.
 */
export function reachedBy(root, testFile, { edges, commands }) {
  const text = readFileSync(join(root, testFile), 'utf8');
  const reached = new Map([[testFile, 0]]);
  const queue = [testFile];
  while (queue.length > 0) {
    const module = queue.shift();
    const depth = reached.get(module) + 1;
    const next = [...(edges.get(module) ?? [])];
    if (module === PROGRAM)
      for (const [command, names] of commands)
        if (names.some((name) => text.includes(`'${name}'`) || text.includes(`"${name}"`)))
          next.push(command);
    for (const used of next)
      if (!reached.has(used)) {
        reached.set(used, depth);
        queue.push(used);
      }
  }
  return reached;
}
