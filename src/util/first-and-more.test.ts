/**
 * FirstAndMore: its first entry inline, the others in a Map, and `null` values told apart from
 * misses (the configurator keeps "not a table's permits" as null).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FirstAndMore } from './first-and-more.ts';

describe('FirstAndMore', () => {
  it('finds its first entry and the ones added after, and nothing else', () => {
    const map = new FirstAndMore<string | number, string | null>('a', null);
    assert.equal(map.get('a'), null, 'a null value is a value, not a miss');
    assert.equal(map.get('b'), undefined);
    map.set('b', 'B');
    map.set(3, 'three');
    assert.equal(map.get('b'), 'B');
    assert.equal(map.get(3), 'three');
    assert.equal(map.get('3'), undefined, 'keys compare as a Map does, not as text');
    map.set('b', 'B2');
    assert.equal(map.get('b'), 'B2');
    assert.equal(map.get('a'), null);
  });

  it('refuses to replace its first entry', () => {
    const map = new FirstAndMore('a', 1);
    assert.throws(() => map.set('a', 2), /first entry is fixed/);
    assert.equal(map.get('a'), 1);
  });
});
