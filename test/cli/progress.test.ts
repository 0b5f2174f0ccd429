/**
 * Feedback on long work: on a terminal, every command that reads an input shows its phases on
 * stderr (reading each file, decoding, building the cluster, then the command's own: computing,
 * explaining, linting, comparing, compiling), and clears the line before its output; in a pipe
 * nothing is shown; with NO_COLOR the line is cleared without escape sequences.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';

const SHOP = 'examples/shop';
const ESCAPE = '\u001b';

/** The phases a run showed, in order (each drawn as `label…` or `label [bar] n%`). */
function shown(stderr: string): string[] {
  const phases: string[] = [];
  for (const piece of stderr.split('\r')) {
    const text = piece.startsWith(`${ESCAPE}[2K`) ? piece.slice(4) : piece;
    const label = /^([a-z][^[…]*?)(?:…| \[)/.exec(text)?.[1]?.trim();
    if (label && phases[phases.length - 1] !== label) phases.push(label);
  }
  return phases;
}

describe('progress of long work', () => {
  const commands: [string, string[], RegExp][] = [
    ['validate', ['validate', '-f', SHOP], /^building the cluster$/],
    ['matrix', ['matrix', '-f', SHOP], /^computing the matrix$/],
    ['explain', ['explain', '-f', SHOP], /^explaining \d+ endpoints$/],
    ['lint', ['lint', '-f', SHOP], /^linting$/],
    ['diff', ['diff', '-f', SHOP, '--to', SHOP], /^comparing the two inputs$/],
    ['compile', ['compile', '-f', SHOP], /^compiling \d+ pods$/],
  ];
  for (const [name, args, own] of commands)
    it(`${name}: its phases on a terminal, nothing in a pipe`, async () => {
      const onTerminal = await cli(args, { tty: true, columns: 200 });
      const phases = shown(onTerminal.stderr);
      assert.ok(
        phases.some((p) => /^reading .*\.yaml$/.test(p)),
        `no file read in ${JSON.stringify(phases)}`,
      );
      assert.ok(phases.includes('building the cluster'), JSON.stringify(phases));
      assert.ok(
        phases.some((p) => own.test(p)),
        `no ${String(own)} in ${JSON.stringify(phases)}`,
      );
      // The line is cleared before the command ends: the terminal keeps only the output.
      assert.ok(onTerminal.stderr.endsWith(`\r${ESCAPE}[2K`), JSON.stringify(onTerminal.stderr.slice(-40)));
      const piped = await cli(args);
      assert.equal(piped.stderr, '');
      assert.equal(piped.code, onTerminal.code);
    });

  it('with NO_COLOR: the same phases, cleared with spaces instead of escape sequences', async () => {
    const plain = await cli(['matrix', '-f', SHOP], { tty: true, columns: 200, env: { NO_COLOR: '1' } });
    assert.ok(shown(plain.stderr).includes('computing the matrix'));
    assert.ok(!plain.stderr.includes(ESCAPE));
    assert.match(plain.stderr, /\r +\r$/);
  });
});
