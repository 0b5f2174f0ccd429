/**
 * nftables scripts of very large chains: written line by line, never spread into one call
 * (a spread of ~125,000 lines into push() overflows the stack).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NftObjects, tableBlock } from '../../src/datapaths/nftables/objects.ts';
import { operationsScript } from '../../src/datapaths/nftables/operations.ts';

const RULES = 300_000;
const rules = Array.from(
  { length: RULES },
  (_, i) => `ip saddr 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255} accept`,
);

describe('nftables scripts of very large chains', () => {
  it('a transaction adding a chain of 300,000 rules', () => {
    const script = operationsScript([{ type: 'add-chain', name: 't_big', lines: rules, flush: true }]);
    assert.equal(script.split('\n').length, RULES + 3); // add chain, flush chain, the rules, ''
  });

  it('the whole table holding such a chain', () => {
    const objects = new NftObjects();
    objects.chains.set('t_big', rules);
    const block = tableBlock(objects, new Map(), 'fp');
    assert.ok(block.includes('\t\tip saddr 10.4.147.223 accept\n'));
  });
});
