import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { cidrContains, cidrCovers, familyBits, makeCidr, parseCidr, type Cidr } from './ip.ts';
import { subtractCidrs } from './subtract.ts';

const cidr = (text: string): Cidr => {
  const r = parseCidr(text);
  assert.ok(r.ok);
  return r.value;
};

describe('subtractCidrs', () => {
  it('splits a block around an except', () => {
    assert.deepEqual(
      subtractCidrs(cidr('10.0.0.0/8'), [cidr('10.1.0.0/16')]).map((c) => c.text),
      [
        '10.0.0.0/16',
        '10.2.0.0/15',
        '10.4.0.0/14',
        '10.8.0.0/13',
        '10.16.0.0/12',
        '10.32.0.0/11',
        '10.64.0.0/10',
        '10.128.0.0/9',
      ],
    );
    assert.deepEqual(
      subtractCidrs(cidr('172.17.0.0/16'), [cidr('172.17.1.0/24')]).map((c) => c.text).length,
      8,
    );
    assert.deepEqual(subtractCidrs(cidr('10.0.0.0/8'), [cidr('10.0.0.0/8')]), []);
    assert.deepEqual(subtractCidrs(cidr('10.0.0.0/24'), [cidr('10.0.0.0/8')]), []);
    assert.deepEqual(
      subtractCidrs(cidr('10.0.0.0/24'), [cidr('11.0.0.0/8'), cidr('fd00::/8')]).map((c) => c.text),
      ['10.0.0.0/24'],
    );
    assert.deepEqual(
      subtractCidrs(cidr('2001:db8::/32'), [cidr('2001:db8:8000::/33')]).map((c) => c.text),
      ['2001:db8::/33'],
    );
  });
  it('gives the minimal cover: the same prefixes as splitting the block in halves (random IPv4 and IPv6)', () => {
    // The definition, slow and obvious: halve until a half is clear of every removed prefix.
    const byHalves = (from: Cidr, remove: readonly Cidr[]): Cidr[] => {
      const relevant = remove.filter(
        (r) => r.family === from.family && (cidrCovers(from, r) || cidrCovers(r, from)),
      );
      if (relevant.some((r) => cidrCovers(r, from))) return [];
      if (relevant.length === 0) return [from];
      const child = from.prefix + 1;
      const half = 1n << BigInt(familyBits(from.family) - child);
      return [
        ...byHalves(makeCidr(from.family, from.base, child), relevant),
        ...byHalves(makeCidr(from.family, from.base + half, child), relevant),
      ];
    };
    // Prefixes within the first /16 of the family's space, so that blocks and excepts meet.
    const prefixArb = (family: 4 | 6, min: number, max: number) =>
      fc.tuple(fc.bigInt({ min: 0n, max: 0xffffn }), fc.integer({ min, max })).map(([v, p]) => {
        const bits = familyBits(family);
        const base = ((v << BigInt(bits - 32)) >> BigInt(bits - p)) << BigInt(bits - p);
        return makeCidr(family, base, p);
      });
    const caseArb = fc
      .constantFrom<4 | 6>(4, 6)
      .chain((family) =>
        fc.tuple(prefixArb(family, 16, 22), fc.array(prefixArb(family, 17, 32), { maxLength: 8 })),
      );
    fc.assert(
      fc.property(caseArb, ([from, remove]) => {
        assert.deepEqual(
          subtractCidrs(from, remove).map((c) => c.text),
          byHalves(from, remove).map((c) => c.text),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('covers exactly the remaining addresses, with disjoint prefixes (random IPv4)', () => {
    const prefixArb = (min: number) =>
      fc.tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min, max: 24 })).map(([v, p]) => {
        const base = ((BigInt(v) << 16n) >> BigInt(32 - p)) << BigInt(32 - p);
        return makeCidr(4, base & 0xffffffffn, p);
      });
    fc.assert(
      fc.property(
        prefixArb(4),
        fc.array(prefixArb(8), { maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 20, maxLength: 20 }),
        (from, remove, probes) => {
          const result = subtractCidrs(from, remove);
          for (const probe of probes) {
            const ip = { family: 4 as const, value: BigInt(probe) };
            const expected = cidrContains(from, ip) && !remove.some((r) => cidrContains(r, ip));
            const hits = result.filter((c) => cidrContains(c, ip)).length;
            assert.equal(hits, expected ? 1 : 0);
          }
          // Probe inside the block too, where the interesting cases are.
          for (const offset of [0n, 1n, 255n]) {
            const ip = { family: 4 as const, value: from.base + offset };
            const expected = cidrContains(from, ip) && !remove.some((r) => cidrContains(r, ip));
            assert.equal(result.filter((c) => cidrContains(c, ip)).length, expected ? 1 : 0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
