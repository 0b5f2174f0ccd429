/**
 * `palisade render --apply` as root: the nftables ruleset applied to a scratch network namespace,
 * twice (an atomic replace), without error.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { acquireDatapathLock, run } from '../../src/dataplane/index.ts';
import { cli } from '../helpers/cli.ts';
import { needsRoot, scratchNetns } from '../helpers/kernel.ts';

const SHOP = [
  '-f',
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
];
/** `palisade render --target nftables --node node-1 …` on the running shop. */
const nftablesNode1 = (...args: string[]) =>
  cli(['render', '--target', 'nftables', '--node', 'node-1', ...args, ...SHOP]);

describe(
  'palisade render --apply',
  { skip: needsRoot('applying rulesets (a scratch network namespace)') },
  () => {
    const NETNS = scratchNetns('palisade-render-test');

    it('applies the table in the given namespace, and again (atomic replace) without error', async () => {
      for (let i = 0; i < 2; i++) {
        const result = await nftablesNode1('--apply', '--netns', NETNS);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout, 'applied table inet palisade for node node-1\n');
      }
      const listed = await run('nft', ['list', 'map', 'inet', 'palisade', 'in_4'], { netns: NETNS });
      assert.match(listed.stdout, /10\.244\.1\.11 : goto t_[0-9a-f]{16}/);
    });

    it('waits for no agent: a process holding the datapath lock makes --apply fail in one line', async () => {
      const runDir = mkdtempSync(join(tmpdir(), 'palisade-render-lock-'));
      const held = acquireDatapathLock(NETNS, { root: `${runDir}/datapath`, what: 'the test' });
      try {
        const result = await nftablesNode1('--apply', '--netns', NETNS, '--run-dir', runDir);
        assert.equal(result.code, 1);
        assert.match(
          result.stderr,
          new RegExp(
            `^palisade: the nftables datapath in network namespace ${NETNS} is busy: another palisade process`,
          ),
        );
        assert.doesNotMatch(result.stderr, /\n\s+at /);
        held.release();
        const free = await nftablesNode1('--apply', '--netns', NETNS, '--run-dir', runDir);
        assert.equal(free.code, 0, free.stderr);
      } finally {
        held.release();
        rmSync(runDir, { recursive: true, force: true });
      }
    });

    it('reports a namespace that does not exist in one line, without a stack trace', async () => {
      const result = await nftablesNode1('--apply', '--netns', 'palisade-no-such-netns');
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        // libnftables enters the namespace itself; the nft executable runs in it through `ip netns exec`.
        /^palisade: (network namespace palisade-no-such-netns does not exist|nft rejected the transaction in network namespace palisade-no-such-netns)/,
      );
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    });
  },
);
