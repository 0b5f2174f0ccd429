/**
 * Pipeline changes between two snapshots of a cluster: what a source sends when it only knows
 * whole snapshots (manifests re-read, a lab re-applied).
 */
import type { Cluster } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { clusterPolicyKey } from '../model/cluster-policy.ts';
import type { PipelineChange } from './types.ts';

/** Upserts that build `cluster` from nothing (implicit namespaces are left to the store). */
export function upsertsOf(cluster: Cluster): PipelineChange[] {
  return [
    ...[...cluster.namespaces.values()]
      .filter((n) => !n.implicit)
      .map((namespace) => ({ type: 'upsert-namespace' as const, namespace })),
    ...cluster.endpoints.map((pod) => ({ type: 'upsert-pod' as const, pod })),
    ...cluster.policies.map((policy) => ({ type: 'upsert-policy' as const, policy })),
    ...[...cluster.nodes.values()].map((node) => ({ type: 'upsert-node' as const, node })),
    ...cluster.clusterPolicies.map((policy) => ({ type: 'upsert-cluster-policy' as const, policy })),
  ];
}

/**
 * Changes that turn `from` into `to`: deletes of what `to` lacks, upserts of what is new or
 * different (with `everything`, also no-op upserts of what is equal).
 */
export function changesBetween(from: Cluster, to: Cluster, everything = false): PipelineChange[] {
  const pods = new Map(from.endpoints.map((e) => [e.id, e] as const));
  const policies = new Map(from.policies.map((p) => [policyKey(p), p] as const));
  const namespaces = new Map(
    [...from.namespaces.values()].filter((n) => !n.implicit).map((n) => [n.name, n] as const),
  );
  const toPods = new Set(to.endpoints.map((e) => e.id));
  const toPolicies = new Set(to.policies.map(policyKey));
  const toNamespaces = new Set([...to.namespaces.values()].filter((n) => !n.implicit).map((n) => n.name));
  const clusterPolicies = new Map(from.clusterPolicies.map((p) => [clusterPolicyKey(p), p] as const));
  const toClusterPolicies = new Set(to.clusterPolicies.map(clusterPolicyKey));
  const changed = (a: object | undefined, b: object): boolean => everything || !a || plain(a) !== plain(b);
  const upserts = upsertsOf(to).filter((c) => {
    if (c.type === 'upsert-pod') return changed(pods.get(c.pod.id), c.pod);
    if (c.type === 'upsert-policy') return changed(policies.get(policyKey(c.policy)), c.policy);
    if (c.type === 'upsert-namespace') return changed(namespaces.get(c.namespace.name), c.namespace);
    if (c.type === 'upsert-cluster-policy')
      return changed(clusterPolicies.get(clusterPolicyKey(c.policy)), c.policy);
    if (c.type === 'upsert-node') return changed(from.nodes.get(c.node.name), c.node);
    return true;
  });
  return [
    ...from.endpoints
      .filter((e) => !toPods.has(e.id))
      .map((e) => ({ type: 'delete-pod' as const, id: e.id })),
    ...from.policies
      .filter((p) => !toPolicies.has(policyKey(p)))
      .map((p) => ({ type: 'delete-policy' as const, key: policyKey(p) })),
    ...[...namespaces.values()]
      .filter((n) => !toNamespaces.has(n.name))
      .map((n) => ({ type: 'delete-namespace' as const, name: n.name })),
    ...from.clusterPolicies
      .filter((p) => !toClusterPolicies.has(clusterPolicyKey(p)))
      .map((p) => ({ type: 'delete-cluster-policy' as const, key: clusterPolicyKey(p) })),
    ...[...from.nodes.keys()]
      .filter((name) => !to.nodes.has(name))
      .map((name) => ({ type: 'delete-node' as const, name })),
    ...upserts,
  ];
}

/** An object's content as text, without where it was read from. */
function plain(object: object): string {
  return JSON.stringify(object, (key, value: unknown) =>
    key === 'location' ? undefined : typeof value === 'bigint' ? value.toString() : value,
  );
}
