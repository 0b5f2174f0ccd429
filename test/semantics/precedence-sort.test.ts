/**
 * `sortByPrecedence` (the keyed sort every list of cluster policies is put in order with) against
 * `comparePolicies` (the one order, compared pair by pair): equal on random mixes of every kind,
 * tier, priority and name, ties included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/generate/random.ts';
import type { ClusterPolicy, ClusterPolicyKind } from '../../src/model/cluster-policy.ts';
import { comparePolicies, sortByPrecedence } from '../../src/model/precedence.ts';

const KINDS: readonly ClusterPolicyKind[] = [
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
  'CalicoNetworkPolicy',
  'CalicoGlobalNetworkPolicy',
  'CalicoProfile',
  'CiliumNetworkPolicy',
  'CiliumClusterwideNetworkPolicy',
];
const TIERS = ['Admin', 'Baseline', 'default', 'Profiles', 'security', 'platform'];

function randomPolicy(random: () => number, i: number): ClusterPolicy {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const kind = pick(KINDS);
  return {
    kind,
    apiVersion: 'test/v1',
    // Few names and namespaces: equal tie texts and keys happen.
    name: `p-${Math.floor(random() * 6)}`,
    ...(random() < 0.5 ? { namespace: `ns-${Math.floor(random() * 3)}` } : {}),
    tier: pick(TIERS),
    // As ingest gives them: the network-policy-api's 0–1000 (1001 for the baseline kind), Calico's
    // any order (Infinity when unset), Cilium's 0.
    priority: kind.startsWith('Calico')
      ? pick([0, 1, 2.5, 100, 1000, Infinity])
      : kind.startsWith('Cilium')
        ? 0
        : pick([0, 1, 10, 1000, 1001]),
    subject: { namespaceSelector: { key: `s${i}`, requirements: [] } },
    ingress: [],
    egress: [],
  };
}

describe('sortByPrecedence', () => {
  it('puts policies in the order comparePolicies gives them', () => {
    const random = seededRandom(7);
    for (let run = 0; run < 300; run++) {
      const policies = Array.from({ length: 1 + Math.floor(random() * 40) }, (_, i) =>
        randomPolicy(random, i),
      );
      const expected = [...policies].sort(comparePolicies);
      const sorted = sortByPrecedence([...policies]);
      // Both sorts are stable: policies equal under the order keep their input order in each.
      assert.deepEqual(
        sorted.map((p) => policies.indexOf(p)),
        expected.map((p) => policies.indexOf(p)),
        `run ${run}`,
      );
    }
  });

  it('sorts in place and returns the array it was given', () => {
    const random = seededRandom(3);
    const policies = Array.from({ length: 10 }, (_, i) => randomPolicy(random, i));
    assert.equal(sortByPrecedence(policies), policies);
  });
});
