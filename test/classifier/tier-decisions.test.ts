/**
 * Tier decisions (a row per table and peer class, two bits per port class) equal the rule walk —
 * the first rule in precedence order whose peer holds the remote and whose ports hold the packet
 * decides; Pass and no match leave the tier undecided — on random ordered rule lists over
 * groups, CIDRs and "anywhere", with port ranges and every protocol, while tables come and go
 * (port classes change), group members change (peer classes change) and classes are forgotten.
 * And the classifier's two forms (decisions, and walking the packed tables) agree on random
 * clusters with the reference evaluator.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { makeCidr, parseIp, type Cidr, type IpAddress } from '../../src/net/ip.ts';
import type { Rule } from '../../src/model/rule.ts';
import { PROTOCOL_INDEX } from '../../src/classifier/direction-table.ts';
import { AddressRecords, TIER_GROUPS } from '../../src/classifier/address-records.ts';
import { AddressGroupIndex } from '../../src/classifier/address-groups.ts';
import { addressWords } from '../../src/classifier/lpm-trie.ts';
import { tierForm } from '../../src/classifier/tier-decision-input.ts';
import {
  NO_FORM,
  TIER_ALLOW,
  TIER_DENY,
  TIER_UNDECIDED,
  TierDecisions,
} from '../../src/classifier/tier-decisions.ts';
import { Classifier } from '../../src/classifier/index.ts';
import { ACTION_ALLOW, ACTION_DENY, ACTION_PASS } from '../../src/classifier/tier-bitmap-table.ts';
import { cidrContains } from '../../src/net/ip.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

const ip = (text: string): IpAddress => {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};
/** Addresses in 10.0.0.0/16 and 10.1.0.0/16, and one IPv6. */
const POOL: IpAddress[] = [
  ...Array.from({ length: 6 }, (_, i) => ip(`10.0.0.${i + 1}`)),
  ...Array.from({ length: 4 }, (_, i) => ip(`10.1.${i}.9`)),
  ip('fd00::7'),
];
const CIDRS: Cidr[] = [
  makeCidr(4, ip('10.0.0.0').value, 16),
  makeCidr(4, ip('10.0.0.0').value, 30),
  makeCidr(4, ip('10.1.2.9').value, 32),
  makeCidr(6, ip('fd00::').value, 64),
];
const GROUPS = ['g0', 'g1', 'g2', 'g3', 'g4#8080'];
const PORTS = [0, 53, 79, 80, 81, 443, 8080, 8081, 9000, 9100, 9101, 65535];
const ACTION_OF = { permit: ACTION_ALLOW, deny: ACTION_DENY, pass: ACTION_PASS } as const;

const ruleArb: fc.Arbitrary<Rule> = fc
  .record({
    action: fc.constantFrom('permit', 'deny', 'pass'),
    protocol: fc.constantFrom('TCP', 'UDP', 'SCTP', 'ANY'),
    remote: fc.oneof(
      fc.constant({ kind: 'any' as const }),
      fc.constantFrom(...CIDRS).map((cidr) => ({ kind: 'cidr' as const, cidr })),
      fc.constantFrom(...GROUPS).map((group) => ({ kind: 'group' as const, group })),
    ),
    ports: fc.option(
      fc
        .tuple(fc.constantFrom(...PORTS), fc.integer({ min: 0, max: 200 }))
        .map(([from, span]) => [from, Math.min(65535, from + (span > 150 ? 0 : span))] as const),
      { nil: undefined },
    ),
  })
  .map(({ action, protocol, remote, ports }) => ({
    action,
    protocol,
    src: remote,
    dst: { kind: 'any' },
    ...(ports ? { dstPorts: ports } : {}),
  }));

/** What the rule walk says: the first matching rule's action, or undecided. */
function walk(
  rules: readonly Rule[],
  address: IpAddress,
  groups: ReadonlySet<string>,
  protocol: string,
  port: number,
): number {
  for (const rule of rules) {
    const remote = rule.src;
    const peer =
      remote.kind === 'any' ||
      (remote.kind === 'cidr' && cidrContains(remote.cidr, address)) ||
      (remote.kind === 'group' && groups.has(remote.group));
    if (!peer) continue;
    if (rule.protocol !== 'ANY' && rule.protocol !== protocol) continue;
    if (rule.dstPorts && (port < rule.dstPorts[0] || port > rule.dstPorts[1])) continue;
    return rule.action === 'permit' ? TIER_ALLOW : rule.action === 'deny' ? TIER_DENY : TIER_UNDECIDED;
  }
  return TIER_UNDECIDED;
}

type Step =
  | { kind: 'table'; rules: Rule[] }
  | { kind: 'drop'; which: number }
  | { kind: 'join'; address: number; group: number }
  | { kind: 'leave'; address: number; group: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(ruleArb, { minLength: 0, maxLength: 70 })
      .map((rules) => ({ kind: 'table' as const, rules })),
  },
  { weight: 1, arbitrary: fc.nat(5).map((which) => ({ kind: 'drop' as const, which })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat(POOL.length - 1), fc.nat(GROUPS.length - 1))
      .map(([address, group]) => ({ kind: 'join' as const, address, group })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.nat(POOL.length - 1), fc.nat(GROUPS.length - 1))
      .map(([address, group]) => ({ kind: 'leave' as const, address, group })),
  },
);

describe('tier decisions', () => {
  it('≡ the rule walk on random ordered rule lists, while tables, members and classes change', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(POOL.length - 1), fc.nat(GROUPS.length - 1)), { maxLength: 20 }),
        fc.array(stepArb, { minLength: 1, maxLength: 25 }),
        (initial, steps) => {
          const records = new AddressRecords({ hashSlots: 4, overflowInts: 8 });
          const index = new AddressGroupIndex(records, TIER_GROUPS);
          const members = GROUPS.map(() => new Set<number>());
          const fill = (group: number): void => {
            index.clear(group);
            index.add(
              group,
              [...(members[group] as Set<number>)].map((a) => POOL[a] as IpAddress),
            );
          };
          const resolver = { idOf: (reference: string): number => GROUPS.indexOf(reference) };
          for (const [address, group] of initial) (members[group] as Set<number>).add(address);
          // Every address has a record (an endpoint's), as pods do.
          for (const address of POOL) records.setEndpoint(address, [-1, -1, -1, -1, -1, -1], [0, 0], 0);
          GROUPS.forEach((_, group) => fill(group));
          const decisions = new TierDecisions(records, (group) => index.membersOf(group));
          const tables: { handle: number; rules: Rule[] }[] = [];
          let handles = 0;
          const words = new Uint32Array(4);
          const check = (): void => {
            for (const { handle, rules } of tables) {
              const form = decisions.formOf(handle);
              assert.notEqual(form, NO_FORM);
              POOL.forEach((address, a) => {
                const groups = new Set(GROUPS.filter((_, g) => (members[g] as Set<number>).has(a)));
                const base = records.find(address);
                const data = records.dataOf(address);
                addressWords(address.family, address.value, words);
                for (const protocol of ['TCP', 'UDP', 'SCTP'] as const)
                  for (const port of PORTS) {
                    const expected = walk(rules, address, groups, protocol, port);
                    const got = decisions.decide(
                      form,
                      data,
                      base,
                      address.family,
                      words,
                      PROTOCOL_INDEX[protocol],
                      port,
                    );
                    assert.equal(
                      got,
                      expected,
                      `${rules.length} rules, ${formatted(address)} ${protocol}/${port}`,
                    );
                  }
              });
            }
          };
          for (const step of steps) {
            if (step.kind === 'table') {
              const actions = Uint8Array.from(step.rules, (r) => ACTION_OF[r.action]);
              const handle = handles++;
              decisions.add(handle, tierForm(step.rules, actions, 'ingress', resolver));
              tables.push({ handle, rules: step.rules });
            } else if (step.kind === 'drop') {
              const [dropped] = tables.splice(step.which % Math.max(1, tables.length), 1);
              if (dropped) decisions.remove(dropped.handle);
            } else {
              const set = members[step.group] as Set<number>;
              if (step.kind === 'join') set.add(step.address);
              else set.delete(step.address);
              fill(step.group);
            }
            check();
          }
        },
      ),
      { numRuns: Math.max(10, Math.floor(RUNS / 3)) },
    );
  });

  it('the classifier walking its tier tables and deciding from classes agree with the reference', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 3, maxClusterPolicies: 5 }), (objects) => {
        const cluster = clusterOf(objects);
        const build = (tierRuleWalk: boolean): Classifier => {
          const state = new ClusterState();
          state.resync(cluster);
          const classifier = new Classifier(state, { tiers: true, tierRuleWalk });
          for (const node of cluster.nodes.values()) classifier.addNodeAddresses(node.name, node.addresses);
          return classifier;
        };
        const fast = build(false);
        const walking = build(true);
        assertAgreesWithReference(
          cluster,
          (packet) => {
            const verdict = fast.allows(packet);
            assert.equal(walking.allows(packet), verdict, 'the two tier forms');
            return verdict;
          },
          'tier decisions: ',
        );
      }),
      { numRuns: Math.max(10, Math.floor(RUNS / 3)) },
    );
  });
});

function formatted(address: IpAddress): string {
  return address.family === 4 ? `v4 ${address.value}` : `v6 ${address.value}`;
}
