/**
 * The README's examples are real: every ```console block that starts with `$ npx palisade`
 * is run and its output compared, so the README cannot drift from what the tool prints.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cli } from './helpers/cli.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const blocks = [...readme.matchAll(/```console\n\$ npx palisade (.+)\n([\s\S]*?)```/g)];

describe('README examples', () => {
  it('has examples for every command', () => {
    const commands = new Set(blocks.map((b) => b[1]?.split(' ')[0]));
    for (const command of ['check', 'matrix', 'explain', 'validate', 'convert'])
      assert.ok(commands.has(command), command);
  });
  for (const [, args = '', expected = ''] of blocks) {
    it(`palisade ${args}`, async () => {
      const result = await cli(args.split(/\s+/));
      // Timings differ run to run; everything else must be exactly as printed in the README.
      const untimed = (text: string): string => text.replace(/, [0-9.]+ ms$/gm, ', <time> ms');
      assert.equal(untimed(result.stdout), untimed(expected));
    });
  }
});
