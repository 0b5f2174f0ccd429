/**
 * How many policies of each ordered kind an input holds, in words: the model keeps every
 * ordered, tiered policy in one list (`Cluster.clusterPolicies`), namespaced Calico
 * NetworkPolicies and CiliumNetworkPolicies included, so a count of that list named "cluster
 * policies" called namespaced policies cluster-scoped. validate's summary and serve's page name
 * each by what it is.
 */
import type { ClusterPolicyKind } from '../model/cluster-policy.ts';
import type { Cluster } from '../model/types.ts';
import { countOf } from '../util/count-of.ts';

/**
 * How each kind is named, singular and plural, in the order counts list them. The
 * network-policy-api's kinds are all cluster-scoped: together, as "cluster policies".
 */
const CLUSTER_POLICY = ['cluster policy', 'cluster policies'] as const;
const KIND_NAMES: Readonly<Record<ClusterPolicyKind, readonly [string, string]>> = {
  AdminNetworkPolicy: CLUSTER_POLICY,
  BaselineAdminNetworkPolicy: CLUSTER_POLICY,
  ClusterNetworkPolicy: CLUSTER_POLICY,
  CalicoNetworkPolicy: ['Calico NetworkPolicy', 'Calico NetworkPolicies'],
  CalicoGlobalNetworkPolicy: ['Calico GlobalNetworkPolicy', 'Calico GlobalNetworkPolicies'],
  CalicoProfile: ['Calico Profile', 'Calico Profiles'],
  CiliumNetworkPolicy: ['CiliumNetworkPolicy', 'CiliumNetworkPolicies'],
  CiliumClusterwideNetworkPolicy: ['CiliumClusterwideNetworkPolicy', 'CiliumClusterwideNetworkPolicies'],
};
const KINDS = Object.keys(KIND_NAMES) as ClusterPolicyKind[];

/**
 * The input's ordered policies by kind, in the order `policyKindWords` lists them (no zeros): as
 * objects, by name — a CiliumNetworkPolicy's `specs` are policies of their own in the model.
 */
export function policyKindCounts(cluster: Cluster): Partial<Record<ClusterPolicyKind, number>> {
  const byKind = new Map<ClusterPolicyKind, Set<string>>();
  for (const policy of cluster.clusterPolicies) {
    let names = byKind.get(policy.kind);
    if (!names) byKind.set(policy.kind, (names = new Set()));
    // One of a Cilium policy's `specs` is named `name[i]`.
    const name = policy.specPath ? policy.name.replace(/\[\d+\]$/, '') : policy.name;
    names.add(`${policy.namespace ?? ''}/${name}`);
  }
  return Object.fromEntries(KINDS.filter((k) => byKind.has(k)).map((k) => [k, byKind.get(k)?.size]));
}

/** `2 Calico NetworkPolicies`, `1 cluster policy`, …: kinds that share a name counted together. */
export function policyKindWords(counts: Readonly<Partial<Record<ClusterPolicyKind, number>>>): string[] {
  const named = new Map<readonly [string, string], number>();
  for (const kind of KINDS) {
    const count = counts[kind] ?? 0;
    if (count > 0) named.set(KIND_NAMES[kind], (named.get(KIND_NAMES[kind]) ?? 0) + count);
  }
  return [...named].map(([names, count]) => countOf(count, ...names));
}
