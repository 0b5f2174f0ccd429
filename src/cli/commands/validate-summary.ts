/**
 * What `palisade validate` counts, and the summary line that ends its text output. The model
 * keeps every ordered, tiered policy in one list (`Cluster.clusterPolicies`), namespaced Calico
 * NetworkPolicies and CiliumNetworkPolicies included; the line names each by what it is, so a
 * namespaced policy is never called a cluster policy.
 */
import type { Cluster } from '../../model/types.ts';
import type { ClusterPolicyKind } from '../../model/cluster-policy.ts';
import { countOf } from '../../util/count-of.ts';
import { policyKindCounts, policyKindWords } from '../../analysis/index.ts';

/** `validate -o json`'s `objects`: how many of each the input holds. */
interface ValidateCounts {
  readonly namespaces: number;
  readonly endpoints: number;
  /** Kubernetes NetworkPolicies (networking.k8s.io/v1, and extensions/v1beta1's). */
  readonly policies: number;
  /** Every policy of the other kinds: the network-policy-api's, Calico's and Cilium's. */
  readonly clusterPolicies: number;
  /** The objects of `clusterPolicies` by kind, in the order the line lists them (a Cilium policy of several `specs` is one: they may sum to less); absent when there are none. */
  readonly clusterPolicyKinds?: Readonly<Partial<Record<ClusterPolicyKind, number>>>;
  readonly nodes: number;
  /** Absent when none. */
  readonly services?: number;
  /** Staged policies of any kind: not enforced, in none of the counts above; absent when none. */
  readonly staged?: number;
}

export function countObjects(cluster: Cluster): ValidateCounts {
  const kinds = policyKindCounts(cluster);
  return {
    namespaces: cluster.namespaces.size,
    endpoints: cluster.endpoints.length,
    policies: cluster.policies.length,
    clusterPolicies: cluster.clusterPolicies.length,
    ...(cluster.clusterPolicies.length > 0 ? { clusterPolicyKinds: kinds } : {}),
    nodes: cluster.nodes.size,
    ...(cluster.services ? { services: cluster.services.length } : {}),
    ...(cluster.staged
      ? { staged: cluster.staged.policies.length + cluster.staged.clusterPolicies.length }
      : {}),
  };
}

/**
 * `4 namespaces, 6 endpoints, 6 policies, 1 service`: "policies" are Kubernetes NetworkPolicies,
 * always shown; every other count only when not 0, `2 Calico NetworkPolicies`,
 * `1 CiliumClusterwideNetworkPolicy`, under its own name.
 */
export function objectsSummary(counts: ValidateCounts): string {
  const parts = [
    countOf(counts.namespaces, 'namespace'),
    countOf(counts.endpoints, 'endpoint'),
    countOf(counts.policies, 'policy', 'policies'),
  ];
  parts.push(...policyKindWords(counts.clusterPolicyKinds ?? {}));
  if (counts.services) parts.push(countOf(counts.services, 'service'));
  if (counts.staged) parts.push(countOf(counts.staged, 'staged policy', 'staged policies'));
  return parts.join(', ');
}
