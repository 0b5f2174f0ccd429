/**
 * Interval sets and peer sets against plain sets of numbers: every operation, on random members
 * around interval edges.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  forEachCommon,
  forEachMember,
  hasMember,
  intersectSets,
  intersectionSize,
  peersHave,
  peersUnion,
  setOf,
  setSize,
  subtractSets,
  unionSets,
  type IntervalSet,
} from './interval-set.ts';

const members = (set: IntervalSet): number[] => {
  const out: number[] = [];
  forEachMember(set, (m) => out.push(m));
  return out;
};
const sorted = (values: Iterable<number>): number[] => [...new Set(values)].sort((x, y) => x - y);
const memberArb = fc.array(fc.integer({ min: 0, max: 80 }), { maxLength: 60 });

describe('interval sets', () => {
  it('union, intersection, difference, membership and size equal those of plain sets', () => {
    fc.assert(
      fc.property(memberArb, memberArb, fc.integer({ min: -1, max: 82 }), (xs, ys, probe) => {
        const a = setOf(xs);
        const b = setOf(ys);
        const x = new Set(xs);
        const y = new Set(ys);
        assert.deepEqual(members(a), sorted(xs));
        assert.equal(setSize(a), x.size);
        assert.deepEqual(members(unionSets(a, b)), sorted([...x, ...y]));
        assert.deepEqual(members(intersectSets(a, b)), sorted([...x].filter((m) => y.has(m))));
        assert.deepEqual(members(subtractSets(a, b)), sorted([...x].filter((m) => !y.has(m))));
        assert.equal(hasMember(a, probe), x.has(probe));
        assert.equal(intersectionSize(a, b), [...x].filter((m) => y.has(m)).length);
        const common: number[] = [];
        forEachCommon(a, b, setSize, (m) => common.push(m));
        assert.deepEqual(sorted(common), sorted([...x].filter((m) => y.has(m))));
        // Intervals stay canonical: sorted, disjoint, not touching.
        for (let i = 2; i < a.length; i += 2) assert.ok((a[i] as number) > (a[i - 1] as number));
        assert.deepEqual(members(peersUnion([a, b])), sorted([...x, ...y]));
        assert.equal(peersHave([a, b], probe), x.has(probe) || y.has(probe));
      }),
      { numRuns: 300 },
    );
  });
});
