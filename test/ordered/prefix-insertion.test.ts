/**
 * Priority-aware insertion for prefix keys (ordered/prefix-insertion.ts): the entries it keeps
 * decide every packet as first match over the ordered rules does, under the canonical
 * subsets-first order (and so under longest-prefix match) — on random ordered lists of
 * overlapping CIDRs, protocols and port ranges — and the CFP's two moves are visible: a covered
 * key is refused, a partly overlapped entry gets a covering entry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { insertByPriority } from '../../src/ordered/prefix-insertion.ts';
import { compareRules, ruleText, type NetRef, type Rule } from '../../src/model/rule.ts';
import { firstMatch, type Packet } from '../../src/configurator/index.ts';
import { parseCidr, parseIp } from '../../src/net/ip.ts';

type Decided = Rule & { action: 'permit' | 'deny' };
const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const NO_GROUPS = { has: () => false };

function net(text: string): NetRef {
  if (text === 'any') return { kind: 'any' };
  const cidr = parseCidr(text);
  if (!cidr.ok) throw new Error(text);
  return { kind: 'cidr', cidr: cidr.value };
}

function rule(
  action: Decided['action'],
  src: string,
  protocol: Rule['protocol'],
  ports?: [number, number],
): Decided {
  return { action, protocol, src: net(src), dst: { kind: 'any' }, ...(ports ? { dstPorts: ports } : {}) };
}

const CIDRS = [
  'any',
  '10.0.0.0/8',
  '10.1.0.0/16',
  '10.1.2.0/24',
  '10.1.2.3/32',
  '10.2.0.0/16',
  '10.2.0.1/32',
];
const ruleArb: fc.Arbitrary<Decided> = fc
  .record({
    action: fc.constantFrom('permit' as const, 'deny' as const),
    src: fc.constantFrom(...CIDRS),
    protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'ANY' as const),
    ports: fc.option(
      fc
        .tuple(fc.integer({ min: 78, max: 84 }), fc.integer({ min: 0, max: 4 }))
        .map(([from, span]): [number, number] => [from, from + span]),
      { nil: undefined },
    ),
  })
  .map(({ action, src, protocol, ports }) => rule(action, src, protocol, ports));

const PROBES = ['10.1.2.3', '10.1.2.4', '10.1.9.9', '10.2.0.1', '10.2.0.2', '10.9.9.9', '192.0.2.1'];

describe('priority-aware insertion for prefix keys', () => {
  it('entries in subsets-first order ≡ first match over the ordered rules', () => {
    fc.assert(
      fc.property(fc.array(ruleArb, { maxLength: 8 }), (rules) => {
        const ordered = [...rules, rule('deny', 'any', 'ANY')];
        const entries = insertByPriority(ordered).sort(compareRules);
        for (const text of PROBES) {
          const ip = parseIp(text);
          if (!ip.ok) throw new Error(text);
          for (const protocol of ['TCP', 'UDP', 'SCTP'] as const)
            for (let port = 76; port <= 90; port++) {
              const packet: Packet = { src: ip.value, dst: ip.value, protocol, port };
              assert.equal(
                firstMatch(entries, packet, NO_GROUPS),
                firstMatch(ordered, packet, NO_GROUPS),
                `${text} ${protocol}/${port}\n${entries.map(ruleText).join('\n')}`,
              );
            }
        }
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it('refuses a key a higher-priority entry covers (CFP 1a, 2a)', () => {
    const entries = insertByPriority([
      rule('deny', '10.0.0.0/8', 'ANY'),
      rule('permit', '10.1.2.3/32', 'TCP', [80, 80]),
    ]);
    assert.deepEqual(entries.map(ruleText), ['deny ANY 10.0.0.0/8 -> any port any']);
  });

  it('synthesizes a covering entry where a lower-priority, more specific key overlaps a higher-priority one (CFP 2b)', () => {
    // Deny 10/8 on TCP/80 first; then permit everything from 10.1.2.3: longest-prefix match would
    // let 10.1.2.3 → TCP/80 through, so the overlap keeps the deny at the more specific key.
    const entries = insertByPriority([
      rule('deny', '10.0.0.0/8', 'TCP', [80, 80]),
      rule('permit', '10.1.2.3/32', 'ANY'),
    ]).sort(compareRules);
    assert.deepEqual(entries.map(ruleText), [
      'deny TCP 10.1.2.3/32 -> any port 80',
      'permit ANY 10.1.2.3/32 -> any port any',
      'deny TCP 10.0.0.0/8 -> any port 80',
    ]);
  });
});
