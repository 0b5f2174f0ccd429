/**
 * What `npm run test:quick` takes a test file to run (scripts/test-map.mjs), on the project's own
 * modules: a named import from a layer's index.ts reaches the module defining the name and not
 * the rest of the layer; a type-only import reaches nothing; the CLI's command modules are reached
 * only by tests that name the command; a test starting the executable reaches the CLI.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dependencies, moduleUses, reachedBy, sourceFiles } from '../scripts/test-map.mjs';

const ROOT = join(import.meta.dirname, '..');

describe('the quick loop finds the tests a change reaches', () => {
  const modules = ['src', 'test', 'scripts', 'eslint-rules'].flatMap((dir) => sourceFiles(ROOT, dir));
  const graph = dependencies(moduleUses(ROOT, modules));
  const reaches = (test: string, module: string): boolean => reachedBy(ROOT, test, graph).has(module);

  it("follows a named import through a layer's index.ts to its module, and no further", () => {
    assert.ok(reaches('test/analysis/suggest.test.ts', 'src/analysis/suggest/units.ts'));
    assert.ok(!reaches('test/semantics/evaluator.test.ts', 'src/analysis/suggest/units.ts'));
    assert.ok(!reaches('test/analysis/matrix-engine.test.ts', 'src/analysis/suggest/units.ts'));
  });

  it('reaches a CLI command only from tests that name it, and the CLI from tests that start it', () => {
    assert.ok(reaches('test/cli/suggest.test.ts', 'src/cli/commands/suggest.ts'));
    assert.ok(!reaches('test/cli/tiers.test.ts', 'src/cli/commands/suggest.ts'));
    assert.ok(reaches('test/ingest/read-inputs.test.ts', 'src/cli/main.ts'));
  });

  it('leaves type-only imports to the type check, and counts imports away', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-test-map-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const files: Record<string, string> = {
      'a.test.ts': "import type { T } from './t.ts';\nimport { f, type G } from './index.ts';\n",
      'index.ts': "export { f } from './f.ts';\nexport { g, type G } from './g.ts';\n",
      'f.ts': "import { h } from './h.ts';\nexport const f = h;\n",
      'g.ts': 'export const g = 1;\nexport type G = number;\n',
      'h.ts': 'export const h = 1;\n',
      't.ts': 'export type T = number;\n',
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const fixture = dependencies(moduleUses(dir, Object.keys(files)));
    const depths = reachedBy(dir, 'a.test.ts', fixture);
    assert.deepEqual(Object.fromEntries(depths), { 'a.test.ts': 0, 'f.ts': 1, 'h.ts': 2 });
  });
});
