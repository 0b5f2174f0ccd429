import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCidr } from '../net/ip.ts';
import { compareRules, prepareRule, type NetRef, type Rule } from './rule.ts';

const cidr = (text: string): NetRef => {
  const r = parseCidr(text);
  assert.ok(r.ok);
  return { kind: 'cidr', cidr: r.value };
};
const nets: NetRef[] = [
  { kind: 'any' },
  cidr('10.0.0.0/8'),
  cidr('10.1.0.0/16'),
  cidr('10.1.2.3/32'),
  cidr('fd00::/64'),
  cidr('fd00::1/128'),
  { kind: 'group', group: 'ns=a;pod=app=web' },
  { kind: 'group', group: 'ns=a' },
];
const ruleArb: fc.Arbitrary<Rule> = fc
  .record({
    action: fc.constantFrom('permit' as const, 'deny' as const),
    protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'SCTP' as const, 'ANY' as const),
    src: fc.constantFrom(...nets),
    dst: fc.constantFrom(...nets),
    dstPorts: fc.option(fc.constantFrom([80, 80] as const, [1, 1024] as const, [8080, 8090] as const), {
      nil: undefined,
    }),
  })
  .map((r) => (r.dstPorts ? r : { action: r.action, protocol: r.protocol, src: r.src, dst: r.dst }));

describe('rule order', () => {
  it('sorts a rule matching a subset of another first', () => {
    const narrow: Rule = {
      action: 'permit',
      protocol: 'TCP',
      src: cidr('10.1.2.3/32'),
      dst: { kind: 'any' },
      dstPorts: [80, 80],
    };
    const wide: Rule = { action: 'permit', protocol: 'ANY', src: cidr('10.0.0.0/8'), dst: { kind: 'any' } };
    assert.ok(compareRules(narrow, wide) < 0);
    const deny: Rule = { action: 'deny', protocol: 'ANY', src: { kind: 'any' }, dst: { kind: 'any' } };
    const permitAll: Rule = { ...deny, action: 'permit' };
    assert.ok(compareRules(permitAll, deny) < 0, 'permit before deny for equal matches');
  });
  it('prepared sort keys order rules exactly as compareRules does', () => {
    fc.assert(
      fc.property(ruleArb, ruleArb, (a, b) => {
        const byKey = Math.sign(
          prepareRule(a).key < prepareRule(b).key ? -1 : prepareRule(a).key > prepareRule(b).key ? 1 : 0,
        );
        assert.equal(byKey, Math.sign(compareRules(a, b)));
      }),
      { numRuns: 2000 },
    );
  });
});
