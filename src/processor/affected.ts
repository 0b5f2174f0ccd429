/**
 * The processor: from one applied change, the pods whose rules may be stale — exactly the
 * seed's list. A policy change: pods it selected before and selects now. A pod change: the pod
 * itself, and pods whose policies reference a group the pod joined, left or changed in. A
 * namespace change: pods whose policies reference a group that gained or lost the namespace's
 * pods. A pod whose labels, addresses, named ports, host network and node stayed the same
 * affects nothing.
 */
import type { Endpoint } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import type { ClusterState, StateDelta } from '../state/index.ts';

/** What the processor remembers of the last realized state: which pods each policy selected. */
export interface Selections {
  podsOf(policy: string): Iterable<string>;
}

export function affectedPods(state: ClusterState, delta: StateDelta, selections: Selections): Set<string> {
  const affected = new Set<string>();
  if (delta.resync) {
    for (const pod of state.allPods()) affected.add(pod.id);
    for (const touched of delta.pods) if (touched.before) affected.add(touched.before.id);
    return affected;
  }
  for (const { before, after } of delta.policies) {
    if (before) for (const id of selections.podsOf(policyKey(before))) affected.add(id);
    if (after) for (const id of state.podsSelectedBy(after)) affected.add(id);
  }
  for (const { before, after } of delta.pods) {
    if (before && after && sameShape(before, after)) continue;
    affected.add((after ?? before)?.id ?? '');
  }
  for (const group of delta.groups) {
    for (const policy of state.policiesOfGroup(group))
      for (const id of selections.podsOf(policy)) affected.add(id);
  }
  affected.delete('');
  return affected;
}

/** Whether two versions of a pod are the same for policy purposes. */
export function sameShape(a: Endpoint, b: Endpoint): boolean {
  return (
    a.namespace === b.namespace &&
    a.hostNetwork === b.hostNetwork &&
    a.node === b.node &&
    JSON.stringify(a.labels, Object.keys(a.labels).sort()) ===
      JSON.stringify(b.labels, Object.keys(b.labels).sort()) &&
    a.ips.length === b.ips.length &&
    a.ips.every((ip, i) => ip.family === b.ips[i]?.family && ip.value === b.ips[i]?.value) &&
    a.ports.length === b.ports.length &&
    a.ports.every(
      (p, i) =>
        p.name === b.ports[i]?.name && p.port === b.ports[i]?.port && p.protocol === b.ports[i]?.protocol,
    )
  );
}
