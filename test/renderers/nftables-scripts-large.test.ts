/**
 * nftables scripts of very large chains, sets and maps: chains written line by line, never
 * spread into one call (a spread of ~125,000 lines into push() overflows the stack); elements in
 * lines of bounded length, each of them added.
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

  it('the whole table holding a set and a map of more elements than one line takes', () => {
    const objects = new NftObjects();
    const addresses = Array.from({ length: 1201 }, (_, i) => `10.250.${i >> 8}.${i & 255}`);
    objects.sets.set('g_big_4', { declaration: { type: 'ipv4_addr' }, elements: new Set(addresses) });
    objects.sets.set('g_small_4', { declaration: { type: 'ipv4_addr' }, elements: new Set(['10.0.0.1']) });
    objects.maps.set('in_4', {
      type: 'ipv4_addr',
      entries: new Map(addresses.map((a) => [a, 'return'])),
    });
    const block = tableBlock(objects, new Map(), 'fp');
    // Inside a block each `elements =` line replaces the one before: at most one per set or map.
    const blocks = block.split(/\n\t(?=set |map )/);
    for (const part of blocks)
      assert.ok(
        (part.match(/elements =/g) ?? []).length <= 1,
        `one elements line at most:\n${part.slice(0, 200)}`,
      );
    assert.match(block, /\tset g_small_4 \{\n\t\ttype ipv4_addr;\n\t\telements = \{ 10\.0\.0\.1 \}/);
    for (const name of ['g_big_4', 'in_4']) {
      const added = block
        .split('\n')
        .filter((line) => line.startsWith(`add element inet palisade ${name} { `))
        .flatMap((line) => line.slice(line.indexOf('{') + 2, -2).split(', '));
      assert.equal(added.length, 1201, `${name}: every element added once`);
      assert.equal(new Set(added.map((e) => e.split(' : ')[0])).size, 1201);
    }
  });
});
