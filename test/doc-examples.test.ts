/**
 * The documentation's examples are real: every ```console block that starts with
 * `$ npx palisade`, in README.md and in every page under docs/, is run and its output compared,
 * so no page can drift from what the tool prints.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cli } from './helpers/cli.ts';
import { documentationPages, readPage } from './helpers/doc-pages.ts';

const STDERR_ONLY = ' 2>&1 >/dev/null';
const examples = documentationPages().flatMap((page) =>
  [...readPage(page).matchAll(/```console\n\$ npx palisade (.+)\n([\s\S]*?)```/g)].map(
    ([, line = '', expected = '']) => ({ page, line, expected }),
  ),
);

describe('documentation examples', () => {
  it('has examples for every command', () => {
    const commands = new Set(examples.map((e) => e.line.split(' ')[0]));
    for (const command of ['check', 'matrix', 'explain', 'validate', 'convert'])
      assert.ok(commands.has(command), command);
  });
  it("the README's other examples (root, a cluster) are copies of its pages' examples", () => {
    const pages = documentationPages()
      .filter((page) => page !== 'README.md')
      .map(readPage)
      .join('\n');
    const shown = [...readPage('README.md').matchAll(/```text\n[\s\S]*?```/g)].map((m) => m[0]);
    assert.ok(shown.length > 0);
    for (const block of shown) assert.ok(pages.includes(block), block.split('\n')[1]);
  });
  for (const { page, line, expected } of examples) {
    it(`${page}: palisade ${line}`, async () => {
      // `… 2>&1 >/dev/null` shows what a command says on stderr (diagnostics, notes).
      const stderrOnly = line.endsWith(STDERR_ONLY);
      const args = stderrOnly ? line.slice(0, -STDERR_ONLY.length) : line;
      const argv = args.split(/\s+/);
      // An example that writes a directory (`generate -o DIR`) leaves nothing behind it made.
      const out = argv[0] === 'generate' ? argv[argv.indexOf('-o') + 1] : undefined;
      const made = out !== undefined && !existsSync(out) ? out : undefined;
      let result;
      try {
        result = await cli(argv);
      } finally {
        if (made !== undefined) rmSync(made, { recursive: true, force: true });
      }
      // Timings differ run to run; everything else must be exactly as printed on the page.
      const untimed = (text: string): string => text.replace(/, [0-9.]+ ms$/gm, ', <time> ms');
      assert.equal(untimed(stderrOnly ? result.stderr : result.stdout), untimed(expected));
    });
  }
});
