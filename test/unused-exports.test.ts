/**
 * Every export of src/ is used by another file (src/, test/, bench/, web/, scripts/) or is the
 * package's public API (src/index.ts): an export nothing uses is dead code to delete, or a name
 * only its own file needs, to un-export (test/helpers/unused-exports.ts finds them). The few that
 * stay are listed here, each with why.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { findUnusedExports, type UnusedExport } from './helpers/unused-exports.ts';

/** `file name` → why it stays exported though no other file uses it. */
const ALLOWED: Readonly<Record<string, string>> = {
  // The eBPF layout mirrors the header's #defines one for one, used from TypeScript or not.
  'src/datapaths/ebpf/kernel/layout.ts LAYOUT_VERSION': 'bpf/palisade.h PALISADE_LAYOUT_VERSION',
  'src/datapaths/ebpf/kernel/layout.ts MAX_STRIDE': 'bpf/match.h MAX_STRIDE',
  'src/datapaths/ebpf/kernel/layout.ts DIR_INGRESS': 'bpf/palisade.h DIR_INGRESS, beside DIR_EGRESS',
  // tsc's declarations name it: registry.ts's BACKENDS has a type built from nftablesTarget's.
  'src/datapaths/nftables/target.ts NftablesOutput':
    'named by the declaration output of datapaths/registry.ts',
  // Types of exported functions' parameters and results: a caller names them through the function.
  'src/flows/agent-reader.ts ReadAgentOptions':
    'a parameter or return type of an exported function: callers name it through the function',
  'src/flows/flow-file.ts FlowFile':
    'a parameter or return type of an exported function: callers name it through the function',
  'src/flows/json-locate.ts LocatedJson':
    'a parameter or return type of an exported function: callers name it through the function',
};

const key = (e: UnusedExport): string => `${e.where.split(':')[0]} ${e.name}`;

describe('exports of src/', () => {
  it('are each used by another file, or allowed here with a reason', () => {
    const found = findUnusedExports();
    const unexpected = found
      .filter((e) => !(key(e) in ALLOWED))
      .map((e) =>
        e.kind === 'unused'
          ? `${e.where} ${e.name}: used nowhere — delete it`
          : `${e.where} ${e.name}: used only in its own file — un-export it`,
      );
    assert.deepEqual(unexpected, [], `exports no other file uses:\n${unexpected.join('\n')}`);
    // An allowance that no longer applies (the export went, or another file uses it) goes too.
    const stale = Object.keys(ALLOWED).filter((k) => !found.some((e) => key(e) === k));
    assert.deepEqual(stale, [], 'allowed above, but gone or used elsewhere now: remove from ALLOWED');
  });

  it('finds dead and file-local exports, and not used ones, however they are reached', () => {
    const root = mkdtempSync(join(tmpdir(), 'palisade-exports-'));
    const write = (path: string, text: string): void => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    try {
      // An ES module project, as this one is: `await import()` at the top of a file.
      write('package.json', '{ "type": "module" }\n');
      write('src/index.ts', "export { publicName } from './api.ts';\n");
      write('src/api.ts', 'export const publicName = 1;\nexport const passedOn = 2;\n');
      write('src/layer/index.ts', "export { passedOn } from '../api.ts';\n");
      write(
        'src/parts.ts',
        'export const imported = 1;\nexport function local(): number { return 2; }\nexport const dead = local();\n',
      );
      write('src/user.ts', "import { imported } from './parts.ts';\nexport const total = imported + 1;\n");
      write('src/loaded.ts', 'export const destructured = 1;\nexport const built = 2;\n');
      write(
        'test/t.ts',
        "const { destructured } = await import('../src/loaded.ts');\nconsole.log(destructured);\n",
      );
      write(
        'scripts/s.mjs',
        "import { built } from '../dist/loaded.js';\nimport { total } from '../dist/user.js';\nconsole.log(built, total);\n",
      );
      const found = findUnusedExports(root).map((e) => `${e.where} ${e.name} ${e.kind}`);
      assert.deepEqual(found, [
        'src/api.ts:2 passedOn unused',
        'src/parts.ts:2 local local',
        'src/parts.ts:3 dead unused',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
