/**
 * The record of what the renderer wrote to a node's policy maps (src/ebpf/shadow-maps.ts): it
 * starts from what the maps hold, follows every write and delete, names each policy map whose
 * entries someone else changed, removed or added, and puts them back; the program's own maps are
 * not its business.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ShadowMaps } from '../../src/datapaths/ebpf/kernel/shadow-maps.ts';
import { FakeMaps } from '../helpers/ebpf.ts';

const key = (n: number, size = 4): Buffer => Buffer.alloc(size, n);

describe('the shadow of the policy maps', () => {
  it('starts from the maps, follows writes, and names and restores what others changed', () => {
    const kernel = new FakeMaps();
    kernel.put('tables', key(1), key(9, 240));
    kernel.put('conntrack', key(1, 40), key(1, 16));
    const shadow = new ShadowMaps(kernel);
    shadow.put('records', key(2, 24), key(7, 132));
    shadow.put('gen', key(0), key(1));
    shadow.remove('tables', key(1));
    shadow.put('tables', key(3), key(8, 240));
    assert.deepEqual(shadow.differences(), [], 'what it wrote is what the maps hold');
    // Another writer: a record deleted, a table entry changed, a stray entry, a flow entry.
    kernel.remove('records', key(2, 24));
    kernel.put('tables', key(3), key(0, 240));
    kernel.put('actions', key(5, 8), key(1));
    kernel.put('conntrack', key(2, 40), key(2, 16));
    assert.deepEqual(shadow.differences(), [
      'map records: 1 missing entry',
      'map tables: 1 changed entry',
      "map actions: 1 not Palisade's entry",
    ]);
    shadow.restore();
    assert.deepEqual(shadow.differences(), []);
    assert.deepEqual(kernel.get('records', key(2, 24)), key(7, 132));
    assert.deepEqual(kernel.get('tables', key(3)), key(8, 240));
    assert.equal(kernel.get('actions', key(5, 8)), undefined);
    assert.equal(kernel.entries('conntrack').length, 2, "the program's own maps are left alone");
  });
});
