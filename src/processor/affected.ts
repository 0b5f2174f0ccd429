/**
 * The processor: from one applied change, the pods whose tables may be stale.
 *
 * The seed lists: for a policy, the pods it selected before and selects after; for a pod, the
 * pod itself and the pods whose policies reference it before or after; for a namespace, the
 * pods whose policies reference it. Palisade's rules reference address groups instead of
 * expanding peer addresses, so a pod joining or leaving a group does not change the referencing
 * pods' rules — that change reaches renderers as a group update (a set-based datapath adds or
 * removes one element). Only named-port groups put their port numbers into rules, so only a
 * change of those numbers makes the referencing pods stale. A pod whose labels, addresses,
 * named ports, host network and node stayed the same affects nothing.
 */
import type { Endpoint } from '../model/types.ts';
import { policyEngine } from '../model/cluster-policy.ts';
import { clusterPolicyOwner, hasNodesPeers, type ReadonlyStore, type StateDelta } from '../state/index.ts';

export function affectedPods(state: ReadonlyStore, delta: StateDelta): Set<string> {
  const affected = new Set<string>();
  if (delta.resync) {
    for (const pod of state.allPods()) affected.add(pod.id);
    for (const touched of delta.pods) if (touched.before) affected.add(touched.before.id);
    return affected;
  }
  for (const { selectedBefore, after } of delta.policies) {
    for (const id of selectedBefore ?? []) affected.add(id);
    if (after) for (const id of state.podsSelectedBy(after)) affected.add(id);
  }
  for (const { before, after } of delta.pods) {
    const pod = after ?? before;
    if (!pod || (before && after && sameShape(before, after))) continue;
    affected.add(pod.id);
  }
  for (const group of delta.partitions) {
    for (const key of state.policiesOfGroup(group)) {
      const policy = state.policy(key);
      if (policy) for (const id of state.podsSelectedBy(policy)) affected.add(id);
      const clusterPolicy = key.startsWith(clusterPolicyOwner(''))
        ? state.clusterPolicy(key.slice(clusterPolicyOwner('').length))
        : undefined;
      if (clusterPolicy) for (const id of state.subjectsOf(clusterPolicy)) affected.add(id);
    }
  }
  clusterPolicyAffected(state, delta, affected);
  return affected;
}

/**
 * Cluster policy: a policy's subjects before and after; for a node change, the subjects of
 * policies with nodes peers and, with Calico's or Cilium's policies, the node's pods; for a namespace whose labels changed, its pods (subjects are chosen
 * by namespace labels, and relative peers resolve against them).
 */
function clusterPolicyAffected(state: ReadonlyStore, delta: StateDelta, affected: Set<string>): void {
  for (const { selectedBefore, after } of delta.clusterPolicies) {
    for (const id of selectedBefore ?? []) affected.add(id);
    if (after) for (const id of state.subjectsOf(after)) affected.add(id);
  }
  const policies = state.allClusterPolicies();
  if (policies.length === 0) return;
  if (delta.nodes.length > 0 || delta.hostAddresses) {
    // A host-network pod's addresses are a node's: outside blocks are cut by them too.
    for (const policy of policies)
      if (hasNodesPeers(policy)) for (const id of state.subjectsOf(policy)) affected.add(id);
    // Ordered lists that compile NetworkPolicy's tier in (Calico's or Cilium's policies there)
    // permit the pod's own node by its addresses (configurator/tier-lists.ts withNodePermits):
    // a changed node's pods are compiled again, or they kept the old addresses' permits.
    if (policies.some((policy) => policyEngine(policy.kind) !== 'network-policy-api')) {
      const changed = new Set(delta.nodes.map(({ before, after }) => (after ?? before)?.name));
      for (const pod of state.allPods())
        if (pod.node !== undefined && changed.has(pod.node)) affected.add(pod.id);
    }
  }
  for (const { before, after } of delta.namespaces) {
    const name = (after ?? before)?.name;
    if (name === undefined || (before && after && sameLabels(before.labels, after.labels))) continue;
    for (const id of state.podsInNamespace(name)) affected.add(id);
  }
}

/** Whether two versions of a pod are the same for policy purposes. */
export function sameShape(a: Endpoint, b: Endpoint): boolean {
  return (
    a.namespace === b.namespace &&
    a.hostNetwork === b.hostNetwork &&
    a.node === b.node &&
    sameLabels(a.labels, b.labels) &&
    a.ips.length === b.ips.length &&
    a.ips.every((ip, i) => ip.family === b.ips[i]?.family && ip.value === b.ips[i]?.value) &&
    a.ports.length === b.ports.length &&
    a.ports.every(
      (p, i) =>
        p.name === b.ports[i]?.name && p.port === b.ports[i]?.port && p.protocol === b.ports[i]?.protocol,
    )
  );
}

function sameLabels(a: Endpoint['labels'], b: Endpoint['labels']): boolean {
  // Also used for namespaces' labels: the same map type.
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k])
  );
}
