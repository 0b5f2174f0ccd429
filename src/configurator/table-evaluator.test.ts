import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCidr, parseIp, type IpAddress } from '../net/ip.ts';
import type { NetRef, Rule } from '../model/rule.ts';
import { canonicalTable } from './table-id.ts';
import { firstMatch, longestPrefixMatch, type GroupLookup } from './table-evaluator.ts';

const ip = (text: string): IpAddress => {
  const r = parseIp(text);
  assert.ok(r.ok);
  return r.value;
};
const cidr = (text: string): NetRef => {
  const r = parseCidr(text);
  assert.ok(r.ok);
  return { kind: 'cidr', cidr: r.value };
};
const groups: GroupLookup = {
  has: (group, address) =>
    group === 'web' && ['10.0.0.1', '10.0.0.2'].some((t) => ip(t).value === address.value),
};
const NETS: NetRef[] = [
  { kind: 'any' },
  cidr('10.0.0.0/8'),
  cidr('10.0.0.0/24'),
  cidr('10.0.0.1/32'),
  { kind: 'group', group: 'web' },
];
const ruleArb: fc.Arbitrary<Rule> = fc
  .record({
    action: fc.constantFrom('permit' as const, 'deny' as const),
    protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'ANY' as const),
    src: fc.constantFrom(...NETS),
    ports: fc.option(fc.constantFrom([80, 80] as const, [1, 1024] as const), { nil: undefined }),
  })
  .map(({ ports, ...r }) => ({ ...r, dst: { kind: 'any' as const }, ...(ports ? { dstPorts: ports } : {}) }));

describe('table evaluator', () => {
  it('first match follows list order; longest prefix match prefers the most specific rule', () => {
    const rules: Rule[] = [
      { action: 'permit', protocol: 'ANY', src: cidr('10.0.0.0/8'), dst: { kind: 'any' } },
      { action: 'deny', protocol: 'TCP', src: cidr('10.0.0.1/32'), dst: { kind: 'any' }, dstPorts: [80, 80] },
    ];
    const packet = { src: ip('10.0.0.1'), dst: ip('10.9.9.9'), protocol: 'TCP' as const, port: 80 };
    assert.equal(firstMatch(rules, packet, groups), 'permit');
    assert.equal(longestPrefixMatch(rules, packet, groups), 'deny');
    assert.equal(firstMatch(rules, { ...packet, port: 81 }, groups), 'permit');
    assert.equal(firstMatch(rules, { ...packet, src: ip('11.0.0.1') }, groups), undefined);
  });
  it('resolves group references', () => {
    const rules: Rule[] = [
      { action: 'permit', protocol: 'ANY', src: { kind: 'group', group: 'web' }, dst: { kind: 'any' } },
    ];
    assert.equal(
      firstMatch(rules, { src: ip('10.0.0.2'), dst: ip('1.1.1.1'), protocol: 'UDP', port: 53 }, groups),
      'permit',
    );
    assert.equal(
      firstMatch(rules, { src: ip('10.0.0.3'), dst: ip('1.1.1.1'), protocol: 'UDP', port: 53 }, groups),
      undefined,
    );
  });
  it('on canonical tables, longest prefix match and first match agree', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArb, { maxLength: 8 }),
        fc.constantFrom('10.0.0.1', '10.0.0.2', '10.0.0.77', '10.5.0.1', '8.8.8.8'),
        fc.constantFrom(80, 443),
        fc.constantFrom('TCP' as const, 'UDP' as const),
        (rules, src, port, protocol) => {
          const table = canonicalTable(rules);
          const packet = { src: ip(src), dst: ip('192.168.0.1'), protocol, port };
          assert.equal(
            longestPrefixMatch(table.rules, packet, groups),
            firstMatch(table.rules, packet, groups),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});
