import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cidrContains, cidrCovers, formatIp, parseCidr, parseIp } from './ip.ts';

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
});
