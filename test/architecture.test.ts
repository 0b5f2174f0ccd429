/**
 * The architecture as docs/ARCHITECTURE.md draws it is the architecture the code has: the
 * import picture lists exactly the layers each layer imports, the layers form no cycle, no
 * module imports itself through a cycle (type imports included), and the shared vocabulary
 * imports only itself. The layer rule (index.ts/types.ts between layers) is the lint rule
 * palisade/layer-imports; this test checks that rule catches a reach into a layer, too. The
 * house's table names every folder of src/ and only those, and every file the page names by its
 * path (src/…, test/…, bpf/…, scripts/…) exists — the page drifts from the code no further than
 * prose can.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import layerImports from '../eslint-rules/layer-imports.js';
import { findCycle, layerGraph, moduleGraph, SRC } from './helpers/import-graph.ts';

const VOCABULARY = new Set(['model', 'net', 'util']);
const ARCHITECTURE = join(import.meta.dirname, '..', 'docs', 'ARCHITECTURE.md');

/** The picture: layer → the layers it imports besides the vocabulary, as the doc draws it. */
function documentedGraph(): Map<string, Set<string>> {
  const text = readFileSync(ARCHITECTURE, 'utf8');
  const start = text.indexOf('<!-- import-graph');
  assert.ok(start >= 0, 'ARCHITECTURE.md has no import-graph block');
  const block = text.slice(start).split('```')[1] ?? '';
  const drawn = new Map<string, Set<string>>();
  for (const line of block.split('\n').slice(1)) {
    const match = /^(\S[^─]*?)\s+─+►\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    const names = (text: string): string[] =>
      text
        .replace(/\(.*?\)/g, '')
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '' && name !== 'nothing');
    for (const from of names(match[1] as string)) drawn.set(from, new Set(names(match[2] as string)));
  }
  return drawn;
}

const ROOT = join(import.meta.dirname, '..');

/** The folders the house's table names (`| \`src/agent/\` | …`), in the marked block. */
function documentedFolders(text: string): string[] {
  const start = text.indexOf('<!-- folders');
  assert.ok(start >= 0, 'ARCHITECTURE.md has no folders table');
  const table = text.slice(start).split('\n\n')[1] ?? '';
  return [...table.matchAll(/^\|\s*`([^`]+?)\/?`/gm)].map((m) => m[1] as string);
}

/** Paths the page names, in backquotes or not: src/…, test/…, bpf/…, scripts/…, bench/…, web/…, deploy/…, docs/…. */
function namedPaths(text: string): string[] {
  const paths =
    text.match(/(?<![\w./-])(?:src|test|bpf|scripts|bench|web|deploy|docs)\/[\w./*<>-]*[\w*>]/g) ?? [];
  return [...new Set(paths)].filter((path) => !path.includes('<'));
}

/** Whether a named path exists; a `*` matches within one path segment, `**\/` any folders. */
function pathExists(path: string): boolean {
  if (!path.includes('*')) return existsSync(join(ROOT, path));
  const segments = path
    .split('**/')
    .map((part) => part.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*'))
    .join('(?:[^/]+/)*');
  const pattern = new RegExp(`^${segments}$`);
  return projectFiles().some((file) => pattern.test(file));
}

/** Every file of the project's own folders, relative to the root. */
function projectFiles(dir = ''): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    if (
      dir === '' &&
      !['src', 'test', 'bpf', 'scripts', 'bench', 'web', 'deploy', 'eslint-rules'].includes(name)
    )
      return [];
    const path = dir === '' ? name : `${dir}/${name}`;
    return statSync(join(ROOT, path)).isDirectory() ? projectFiles(path) : [path];
  });
}

/** Source files the page names by a short path in backquotes (`audit.ts`, `nftables/node.ts`) that no file's path ends with. */
function unknownShortPaths(text: string, files: readonly string[]): string[] {
  const named = [...text.matchAll(/`([\w./-]+\.(?:ts|mjs|h|c))`/g)].map((m) => m[1] as string);
  return [...new Set(named)].filter(
    (name) => !files.some((file) => file === name || file.endsWith(`/${name}`)),
  );
}

describe('architecture', () => {
  const modules = moduleGraph();
  const layers = layerGraph(modules);

  it('draws exactly the imports between layers', () => {
    const drawn = documentedGraph();
    assert.deepEqual([...drawn.keys()].sort(), [...layers.keys()].sort(), 'layers drawn vs layers in src/');
    for (const [layer, imports] of layers) {
      const actual = [...imports].filter((l) => (!VOCABULARY.has(layer) ? !VOCABULARY.has(l) : true)).sort();
      assert.deepEqual([...(drawn.get(layer) ?? [])].sort(), actual, `${layer}'s imports`);
    }
  });

  it("names every folder of src/ in the house's table, and only those", () => {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    const named = documentedFolders(text);
    const inSrc = readdirSync(SRC)
      .filter((name) => statSync(join(SRC, name)).isDirectory())
      .map((name) => `src/${name}`);
    assert.deepEqual(named.filter((f) => f.startsWith('src/')).sort(), inSrc.sort());
    for (const folder of named) assert.ok(existsSync(join(ROOT, folder)), `${folder} does not exist`);
  });

  it('names only files and folders that exist', () => {
    const missing = namedPaths(readFileSync(ARCHITECTURE, 'utf8')).filter((path) => !pathExists(path));
    assert.deepEqual(missing, []);
    // The check can fail: a path that is not there is found.
    assert.deepEqual(namedPaths('see `test/agent/no-such.etcd.test.ts` and src/net/ip.ts.'), [
      'test/agent/no-such.etcd.test.ts',
      'src/net/ip.ts',
    ]);
    assert.equal(pathExists('test/agent/no-such.etcd.test.ts'), false);
    assert.equal(pathExists('test/agent/direct-*.test.ts'), true);
    assert.equal(pathExists('src/**/*.test.ts'), true);
    assert.equal(pathExists('src/**/*.nothing.ts'), false);
  });

  it('names by a short path only source files that exist', () => {
    const files = projectFiles();
    assert.deepEqual(unknownShortPaths(readFileSync(ARCHITECTURE, 'utf8'), files), []);
    assert.deepEqual(unknownShortPaths('`audit.ts`, `nftables/node.ts`, `daemonset.test.ts`', files), [
      'daemonset.test.ts',
    ]);
  });

  it('has no cycle between layers, nor between modules', () => {
    assert.equal(findCycle(layers)?.join(' → '), undefined);
    assert.equal(findCycle(modules)?.join(' → '), undefined);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const withCycle = new Map(modules);
    withCycle.set('model/cluster-policy.ts', [
      ...(modules.get('model/cluster-policy.ts') ?? []),
      'model/types.ts',
    ]);
    // Where the search enters the cycle depends on which module reaches it first.
    const cycle = findCycle(withCycle) ?? [];
    for (const module of ['model/types.ts', 'model/cluster-policy.ts'])
      assert.ok(cycle.includes(module), `${module} not in ${cycle.join(' → ')}`);
  });

  it('lints a reach into another layer, and not an import through its index.ts', () => {
    const linter = new Linter({ cwd: join(SRC, '..') });
    const config: Linter.Config[] = [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module' },
        plugins: { palisade: { rules: { 'layer-imports': layerImports } } },
        rules: { 'palisade/layer-imports': ['error', { root: 'src', shared: [...VOCABULARY] }] },
      },
    ];
    const lint = (source: string, file = join(SRC, 'cli', 'commands', 'probe.ts')) =>
      linter.verify(source, config, { filename: file }).map((m) => `${m.ruleId ?? 'fatal'}: ${m.message}`);
    assert.equal(lint("import { styleFor } from '../../analysis/format/style.ts';").length, 1);
    assert.equal(lint("export { styleFor } from '../../analysis/format/style.ts';").length, 1);
    assert.equal(lint("export const load = () => import('../../renderers/vpp-acl/render.ts');").length, 1);
    assert.deepEqual(
      lint(
        [
          "import { styleFor } from '../../analysis/index.ts';",
          "import type { Matrix } from '../../analysis/types.ts';",
          "import { renderAcls } from '../../renderers/vpp-acl/index.ts';",
          "import { formatIp } from '../../net/ip.ts';",
          "import { program } from '../program.ts';",
        ].join('\n'),
      ),
      [],
    );
    // Inside a layer, anything goes.
    assert.deepEqual(
      lint("import { x } from '../cache/combine.ts';", join(SRC, 'renderers', 'vpp-acl', 'x.ts')),
      [],
    );
  });
});
