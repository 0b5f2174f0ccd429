/**
 * A test file's name says what it needs besides Node (scripts/test-needs.mjs: `x.root.test.ts`,
 * `x.etcd.root.test.ts`, …), so the runner can select by need (`npm test -- --without root`) and
 * a reader knows before opening it. This test holds every name true to the file: a file that
 * imports a helper which makes network namespaces or loads BPF, starts etcd, starts a
 * neutron-server or launches Chromium — or the skip reason of one — carries that need's tag, and
 * a file carrying a tag imports such a helper. Modules that register tests into the file that
 * imports them (they import describe or it from node:test, as the fault trials' suite does) count
 * as part of it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { NEEDS, needsOfName } from '../scripts/test-needs.mjs';

const ROOT = resolve(import.meta.dirname, '..');

/** Per need, the names whose import means a file uses it (helpers that start it, or its skip reason). */
const MARKERS: Record<string, readonly string[]> = {
  browser: ['CHROMIUM_MISSING', 'launchChromium', 'withChromium', 'chromium'],
  etcd: ['needsEtcd', 'startEtcd', 'suiteEtcd', 'RestartableEtcd', 'FaultWorld'],
  neutron: ['startNeutron', 'neutronUnavailable', 'neutronServerBinary'],
  root: ['needsRoot', 'needsEbpf', 'scratchNetns', 'startLab', 'scratchProgram', 'twoPods', 'FaultWorld'],
};

interface Import {
  readonly names: readonly string[];
  readonly from: string;
}

/** The static imports of a module: the names it imports and the specifier. */
export function importsOf(text: string): Import[] {
  return [...text.matchAll(/^import\s+(?:type\s+)?([\s\S]*?)\s+from\s+'([^']+)'/gm)].map((m) => ({
    names: [...(m[1] as string).matchAll(/([A-Za-z_$][\w$]*)(?:\s+as\s+[\w$]+)?/g)]
      .map((n) => n[1] as string)
      .filter((n) => n !== 'type'),
    from: m[2] as string,
  }));
}

/** The needs a module's imports show, following the modules it imports that register tests. */
export function needsOfSource(
  file: string,
  read: (file: string) => string,
  seen = new Set<string>(),
): Set<string> {
  const needs = new Set<string>();
  if (seen.has(file)) return needs;
  seen.add(file);
  for (const { names, from } of importsOf(read(file))) {
    if (from === 'playwright-core') needs.add('browser');
    for (const [need, markers] of Object.entries(MARKERS))
      if (names.some((name) => markers.includes(name))) needs.add(need);
    if (!from.startsWith('.')) continue;
    const target = relative(ROOT, resolve(dirname(join(ROOT, file)), from));
    if (target.endsWith('.test.ts') || !target.endsWith('.ts') || !target.startsWith('test/')) continue;
    const registersTests = importsOf(read(target)).some(
      (i) => i.from === 'node:test' && i.names.some((n) => n === 'describe' || n === 'it' || n === 'test'),
    );
    if (registersTests) for (const need of needsOfSource(target, read, seen)) needs.add(need);
  }
  return needs;
}

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe('test file names', () => {
  const files = [...testFiles('src'), ...testFiles('test')].sort();

  it('say what each file needs: root, etcd, neutron, browser', () => {
    const wrong = files
      .map((file) => {
        const named = needsOfName(file).join('.');
        const needed = [...needsOfSource(file, read)].sort().join('.');
        return named === needed ? undefined : `${file}: named [${named}], imports show [${needed}]`;
      })
      .filter((line) => line !== undefined);
    assert.deepEqual(wrong, []);
  });

  it('carry tags in alphabetical order, each once, between the name and .test.ts', () => {
    for (const file of files) {
      const needs = needsOfName(file);
      assert.deepEqual(needs, [...new Set(needs)].sort(), file);
      const base = file.split('/').at(-1) as string;
      const stem = base.slice(0, -'.test.ts'.length).split('.');
      assert.deepEqual(stem.slice(1), needs, `${file}: only need tags after the first dot`);
    }
  });

  it('finds a need from an import, a suite module, and nothing from a comment (the check can fail)', () => {
    const sources: Record<string, string> = {
      'test/x/a.test.ts':
        "import { needsEtcd } from '../live/etcd-fixture.ts';\nimport { s } from './suite.ts';\n",
      'test/x/suite.ts':
        "import { describe } from 'node:test';\nimport { needsRoot as r } from '../helpers/kernel.ts';\n",
      'test/x/b.test.ts': "// launchChromium, startEtcd\nimport { chromium } from 'playwright-core';\n",
    };
    const readFake = (file: string): string => sources[file] ?? read(file);
    assert.deepEqual([...needsOfSource('test/x/a.test.ts', readFake)].sort(), ['etcd', 'root']);
    assert.deepEqual([...needsOfSource('test/x/b.test.ts', readFake)], ['browser']);
    assert.deepEqual(Object.keys(MARKERS).sort(), Object.keys(NEEDS).sort());
  });
});
