import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { cidrContains, cidrCovers, familyBits, formatIp, makeCidr, parseCidr, parseIp } from './ip.ts';

const ip = (text: string) => {
  const r = parseIp(text);
  assert.ok(r.ok, text);
  return r.value;
};
const cidr = (text: string) => {
  const r = parseCidr(text);
  assert.ok(r.ok, text);
  return r.value;
};

describe('parseIp', () => {
  it('formats IPv6 canonically (RFC 5952)', () => {
    assert.equal(formatIp(ip('2001:DB8:0:0:0:0:0:1')), '2001:db8::1');
    assert.equal(formatIp(ip('2001:db8:0:0:1:0:0:1')), '2001:db8::1:0:0:1');
    assert.equal(formatIp(ip('::')), '::');
    assert.equal(formatIp(ip('1:0:0:0:0:0:0:0')), '1::');
    assert.equal(formatIp(ip('1:2:3:4:5:6:7:8')), '1:2:3:4:5:6:7:8');
    assert.equal(formatIp(ip('1:0:2:3:4:5:6:7')), '1:0:2:3:4:5:6:7');
  });
  it('rejects what Kubernetes strict validation rejects', () => {
    assert.equal(parseIp('010.0.0.1').ok, false);
    assert.equal(parseIp('::ffff:10.0.0.1').ok, false);
    assert.equal(parseIp('fe80::1%eth0').ok, false);
    for (const bad of ['1.2.3', '1.2.3.256', '1::2::3', 'abc', '', '1.2.3.4.5', '12345::'])
      assert.equal(parseIp(bad).ok, false, bad);
  });
  it('flags non-canonical IPv6 without failing', () => {
    const r = parseIp('2001:DB8::1');
    assert.ok(r.ok);
    assert.deepEqual(
      r.problems.map((p) => p.kind),
      ['non-canonical'],
    );
  });
});

describe('parseCidr', () => {
  it('masks host bits and says so', () => {
    const r = parseCidr('10.1.2.3/8');
    assert.ok(r.ok);
    assert.equal(r.value.text, '10.0.0.0/8');
    assert.deepEqual(
      r.problems.map((p) => p.kind),
      ['host-bits'],
    );
  });
  it('rejects bad prefixes', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0.0', '10.0.0.0/', '10.0.0.0/a', '::/129', '10.0.0.0/08']) {
      assert.equal(parseCidr(bad).ok, false, bad);
    }
  });
  it('tests containment within a family only', () => {
    assert.ok(cidrContains(cidr('10.0.0.0/8'), ip('10.255.1.1')));
    assert.ok(!cidrContains(cidr('10.0.0.0/8'), ip('11.0.0.1')));
    assert.ok(cidrContains(cidr('0.0.0.0/0'), ip('1.2.3.4')));
    assert.ok(!cidrContains(cidr('0.0.0.0/0'), ip('::1')));
    assert.ok(cidrContains(cidr('2001:db8::/32'), ip('2001:db8:ffff::1')));
    assert.ok(cidrCovers(cidr('10.0.0.0/8'), cidr('10.1.0.0/16')));
    assert.ok(!cidrCovers(cidr('10.1.0.0/16'), cidr('10.0.0.0/8')));
  });
  it('containment is "the address and the base agree on the prefix bits" (random, both families, every prefix)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<4 | 6>(4, 6),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        fc.nat(128),
        fc.nat(128),
        (family, a, b, prefixSeed, agree) => {
          const bits = familyBits(family);
          const prefix = prefixSeed % (bits + 1);
          const hostBits = BigInt(bits - prefix);
          const base = ((a & ((1n << BigInt(bits)) - 1n)) >> hostBits) << hostBits;
          // Half the addresses share the base's first `agree` bits, so both answers occur.
          let value = b & ((1n << BigInt(bits)) - 1n);
          const shared = BigInt(bits - Math.min(agree % (bits + 1), bits));
          value = ((base >> shared) << shared) | (value & ((1n << shared) - 1n));
          const expected = value >> hostBits === base >> hostBits;
          assert.equal(cidrContains(makeCidr(family, base, prefix), { family, value }), expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
  it('reads IPv4 text as the split-and-match reading did, problems included (random strings)', () => {
    // The earlier reading, kept as the definition.
    const byParts = (text: string): { value?: bigint; problems: string[] } => {
      const parts = text.split('.');
      if (parts.length !== 4) return { problems: [] };
      let value = 0n;
      const problems: string[] = [];
      for (const part of parts) {
        if (!/^[0-9]{1,3}$/.test(part) || Number(part) > 255) return { problems: [] };
        if (part.length > 1 && part.startsWith('0')) problems.push(part);
        value = value * 256n + BigInt(part);
      }
      return { value, problems };
    };
    const textArb = fc.oneof(
      fc.stringMatching(/^[0-9.]{0,18}$/),
      fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((o) => o.join('.')),
      fc.array(fc.stringMatching(/^[0-9]{1,4}$/), { minLength: 3, maxLength: 5 }).map((o) => o.join('.')),
      fc.constantFrom('1.2.3.4.', '.1.2.3', '1..2.3', '01.2.3.4', '255.255.255.255', '256.1.1.1', '0.0.0.0'),
    );
    fc.assert(
      fc.property(textArb, (text) => {
        const expected = byParts(text);
        const parsed = parseIp(text);
        if (expected.value === undefined) {
          assert.equal(parsed.ok, false, text);
          assert.deepEqual(
            parsed.problems.map((p) => p.kind),
            ['invalid'],
            text,
          );
          return;
        }
        // A leading zero is a fatal problem: reported once, naming every such octet, and no value.
        assert.ok(parsed.problems.length <= 1, text);
        assert.deepEqual(
          parsed.problems.flatMap((p) => [...p.message.matchAll(/"([0-9]+)"/g)].map((m) => m[1])),
          expected.problems,
          text,
        );
        assert.equal(parsed.ok, expected.problems.length === 0, text);
        if (!parsed.ok) return;
        assert.equal(parsed.value.value, expected.value, text);
        assert.equal(formatIp(parsed.value), text);
      }),
      { numRuns: 3000 },
    );
  });
});
