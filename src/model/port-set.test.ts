/**
 * Port-set operations against a model that lists every port: union, intersection, difference
 * and containment on random sets (ranges that touch, overlap, nest, and the whole range).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ALL_PORTS,
  containsPorts,
  EMPTY_PORTS,
  intersectPorts,
  MAX_PORT,
  portSetHas,
  portSetOf,
  subtractPorts,
  unionPorts,
  type PortSet,
} from './port-set.ts';
import { PROTOCOLS, type Protocol } from './types.ts';

/** Ports near range edges, where an off-by-one would show. */
const PROBES = [1, 2, 3, 9, 10, 11, 12, 19, 20, 21, 50, 79, 80, 81, 65534, 65535];

const endpointArb = fc.oneof(fc.constantFrom(...PROBES), fc.integer({ min: 1, max: MAX_PORT }));
const entryArb = fc
  .tuple(fc.constantFrom<Protocol>(...PROTOCOLS), endpointArb, endpointArb)
  .map(([protocol, a, b]) => ({ protocol, from: Math.min(a, b), to: Math.max(a, b) }));
const setArb: fc.Arbitrary<PortSet> = fc.oneof(
  fc.array(entryArb, { maxLength: 6 }).map(portSetOf),
  fc.constant(ALL_PORTS),
  fc.constant(EMPTY_PORTS),
);

function probe(set: PortSet): boolean[] {
  return PROTOCOLS.flatMap((protocol) => PROBES.map((port) => portSetHas(set, protocol, port)));
}

/** Sorted, disjoint, not touching: the form every operation must return. */
function assertCanonical(set: PortSet): void {
  for (const protocol of PROTOCOLS) {
    const ranges = set.ranges[protocol];
    ranges.forEach(([from, to], i) => {
      assert.ok(from <= to, `${protocol} ${from}-${to}`);
      const next = ranges[i + 1];
      if (next) assert.ok(next[0] > to + 1, `${protocol} ${from}-${to} touches ${next[0]}`);
    });
  }
}

describe('port sets', () => {
  it('union, intersection and difference agree with the per-port model and stay canonical', () => {
    fc.assert(
      fc.property(setArb, setArb, (a, b) => {
        const [pa, pb] = [probe(a), probe(b)];
        const union = unionPorts(a, b);
        const inter = intersectPorts(a, b);
        const diff = subtractPorts(a, b);
        for (const set of [union, inter, diff]) assertCanonical(set);
        assert.deepEqual(
          probe(union),
          pa.map((x, i) => x || (pb[i] as boolean)),
        );
        assert.deepEqual(
          probe(inter),
          pa.map((x, i) => x && (pb[i] as boolean)),
        );
        assert.deepEqual(
          probe(diff),
          pa.map((x, i) => x && !(pb[i] as boolean)),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('containment is exactly "nothing of the inner set is left outside the outer one"', () => {
    fc.assert(
      fc.property(setArb, setArb, (a, b) => {
        const left = subtractPorts(b, a);
        const empty = PROTOCOLS.every((p) => left.ranges[p].length === 0);
        assert.equal(containsPorts(a, b), empty);
        assert.ok(containsPorts(unionPorts(a, b), b));
        assert.ok(containsPorts(a, intersectPorts(a, b)));
      }),
      { numRuns: 500 },
    );
  });
});
