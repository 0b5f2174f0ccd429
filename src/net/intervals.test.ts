import assert from 'node:assert/strict';
import { it } from 'node:test';
import { parseCidr, parseIp, type Cidr } from './ip.ts';
import {
  familyInterval,
  formatInterval,
  intervalCidrs,
  ipBlockIntervals,
  normalizeIntervals,
  subtractIntervals,
} from './intervals.ts';

const cidr = (text: string): Cidr => {
  const parsed = parseCidr(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};
const ip = (text: string): bigint => {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value.value;
};

it('an ipBlock is its cidr minus its excepts', () => {
  const intervals = ipBlockIntervals(cidr('10.0.0.0/8'), [cidr('10.1.0.0/16'), cidr('10.0.0.0/16')]);
  assert.deepEqual(intervals, [{ family: 4, lo: ip('10.2.0.0'), hi: ip('10.255.255.255') }]);
  const holed = ipBlockIntervals(cidr('10.0.0.0/8'), [cidr('10.1.0.0/16')]);
  assert.deepEqual(
    holed.map((i) => [i.lo, i.hi]),
    [
      [ip('10.0.0.0'), ip('10.0.255.255')],
      [ip('10.2.0.0'), ip('10.255.255.255')],
    ],
  );
});

it('prints few prefixes as prefixes and many as a range', () => {
  const [single] = ipBlockIntervals(cidr('192.168.0.0/16'), []);
  assert.ok(single);
  assert.equal(formatInterval(single), '192.168.0.0/16');
  const [rest] = ipBlockIntervals(cidr('10.0.0.0/8'), [cidr('10.0.0.0/16'), cidr('10.1.0.0/16')]);
  assert.ok(rest);
  assert.equal(intervalCidrs(rest).length, 7);
  assert.equal(formatInterval(rest), '10.2.0.0-10.255.255.255');
  assert.equal(formatInterval(familyInterval(6)), '::/0');
});

it('normalizes (merging adjacent pieces, IPv4 before IPv6) and subtracts', () => {
  const a = { family: 4 as const, lo: 0n, hi: 9n };
  const b = { family: 4 as const, lo: 10n, hi: 20n };
  const c = { family: 6 as const, lo: 0n, hi: 5n };
  assert.deepEqual(normalizeIntervals([c, b, a]), [{ family: 4, lo: 0n, hi: 20n }, c]);
  assert.deepEqual(subtractIntervals([{ family: 4, lo: 0n, hi: 20n }], [{ family: 4, lo: 5n, hi: 6n }, c]), [
    { family: 4, lo: 0n, hi: 4n },
    { family: 4, lo: 7n, hi: 20n },
  ]);
});
