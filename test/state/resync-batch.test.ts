/**
 * A resync builds its groups in one batch (a scope's pods walked once for every group of that
 * scope, member objects shared) and the configurator memoizes tier lists per pair of interned
 * tier selections. Both must be invisible: a store built by one upsert at a time has the same
 * groups, members in the same order and named-port numbers, a fresh configurator per pod
 * (nothing shared between pods) gives every pod the same tables as the shared one, and the next
 * change reports the same member and partition changes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Configurator, type PodTables } from '../../src/configurator/index.ts';
import { generateAdminPolicies } from '../../src/generate/admin-policies.ts';
import { generateShape } from '../../src/generate/shapes.ts';
import { ruleText } from '../../src/model/rule.ts';
import type { Cluster } from '../../src/model/types.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { relativePeerObjects } from '../helpers/relative-peers.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 100);

/** The store's groups as plain data: members in their order, named-port counts in theirs. */
function groupsOf(state: ClusterState): unknown[] {
  return [...state.groupKeys()].sort().map((key) => {
    const group = state.group(key);
    return [
      key,
      [...(group?.members.values() ?? [])].map((m) => [
        m.pod,
        m.ips.map((ip) => `${ip.family}:${ip.value}`).join(','),
        m.port ?? '-',
      ]),
      [...(group?.ports ?? [])],
    ];
  });
}

/** The store built without a resync: every object upserted on its own, in the resync's order. */
function oneByOne(cluster: Cluster): ClusterState {
  const state = new ClusterState();
  for (const ns of cluster.namespaces.values()) if (!ns.implicit) state.upsertNamespace(ns);
  for (const pod of cluster.endpoints) state.upsertPod(pod);
  for (const policy of cluster.policies) state.upsertPolicy(policy);
  for (const policy of cluster.clusterPolicies) state.upsertClusterPolicy(policy);
  for (const node of cluster.nodes.values()) state.upsertNode(node);
  return state;
}

function tableText(tables: PodTables): string {
  const side = (t: { readonly rules: readonly Parameters<typeof ruleText>[0][] } | undefined) =>
    t ? t.rules.map(ruleText).join(';') : '-';
  const tiers = (t: PodTables['ingressTiers']) =>
    t ? `${t.id}:${t.admin.map(ruleText).join(';')}|${t.baseline.map(ruleText).join(';')}` : '-';
  return [
    side(tables.ingress),
    side(tables.egress),
    tiers(tables.ingressTiers),
    tiers(tables.egressTiers),
  ].join('\n');
}

function assertSame(cluster: Cluster): void {
  const batched = new ClusterState();
  batched.resync(cluster);
  const single = oneByOne(cluster);
  assert.deepEqual(groupsOf(batched), groupsOf(single));
  const shared = new Configurator(batched);
  for (const pod of batched.allPods()) {
    const own = new Configurator(single).compile(single.pod(pod.id) ?? pod);
    assert.equal(tableText(shared.compile(pod)), tableText(own), pod.id);
  }
  // The change after a resync reports only what it changed: the resync's own member and
  // partition changes (not recorded inside the batch) are not carried into it.
  const first = cluster.endpoints[0];
  if (first) {
    const sorted = (set: ReadonlySet<string>): string[] => [...set].sort();
    const after = batched.deletePod(first.id);
    const expected = single.deletePod(first.id);
    assert.deepEqual(sorted(after.members), sorted(expected.members));
    assert.deepEqual(sorted(after.partitions), sorted(expected.partitions));
    assert.deepEqual(sorted(after.groups), sorted(expected.groups));
  }
}

describe('resync batch and shared tier lists', () => {
  it("shape a with AdminNetworkPolicies: one peer's plain and named-port groups from one walk", () => {
    const shape = generateShape('a', { scale: 0.002, seed: 3 });
    const cluster = clusterOf([
      ...shape.namespaces,
      ...shape.pods,
      ...shape.policies,
      ...generateAdminPolicies(20, 3),
    ]);
    assert.ok(cluster.clusterPolicies.length === 20 && cluster.endpoints.length === 200);
    assertSame(cluster);
  });

  it('relative peers: lists shared by selection still differ by namespace and ports', () => {
    // v0.1.1 relative peers: equal selections whose lists differ by the subject's namespace.
    assertSame(clusterOf(relativePeerObjects()));
  });

  it('on random clusters with tiered cluster policies', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 8, maxPolicies: 4, maxClusterPolicies: 4 }), (objects) =>
        assertSame(clusterOf(objects)),
      ),
      { numRuns: RUNS },
    );
  });
});
