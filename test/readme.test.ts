/**
 * The README's examples are real: every ```console block that starts with `$ npx palisade`
 * is run and its output compared, so the README cannot drift from what the tool prints.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cli } from './helpers/cli.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const STDERR_ONLY = ' 2>&1 >/dev/null';
const blocks = [...readme.matchAll(/```console\n\$ npx palisade (.+)\n([\s\S]*?)```/g)];

describe('README examples', () => {
  it('has examples for every command', () => {
    const commands = new Set(blocks.map((b) => b[1]?.split(' ')[0]));
    for (const command of ['check', 'matrix', 'explain', 'validate', 'convert'])
      assert.ok(commands.has(command), command);
  });
  for (const [, line = '', expected = ''] of blocks) {
    it(`palisade ${line}`, async () => {
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
      // Timings differ run to run; everything else must be exactly as printed in the README.
      const untimed = (text: string): string => text.replace(/, [0-9.]+ ms$/gm, ', <time> ms');
      assert.equal(untimed(stderrOnly ? result.stderr : result.stdout), untimed(expected));
    });
  }
});
