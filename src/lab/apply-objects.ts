/**
 * What `lab apply` does to the lab's objects, like `kubectl apply`: NetworkPolicies, the cluster
 * policies and Namespaces are created or replaced, lab Pods take new labels (pods are created only
 * by `lab up`), and with `prune` the policies the files do not contain are deleted. Shared by the
 * lab that renders itself and the lab with a control plane, which writes the result to etcd.
 */

/** Policy kinds `lab apply` changes (and `--prune` removes when the files lack them). */
const POLICY_KINDS = new Set([
  'NetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);

const identity = (o: Record<string, unknown>): string => {
  const metadata = (o.metadata ?? {}) as { namespace?: string; name?: string };
  const namespaced = !CLUSTER_SCOPED.has(String(o.kind));
  return `${String(o.kind)}/${namespaced ? (metadata.namespace ?? 'default') : ''}/${metadata.name ?? ''}`;
};

/** The lab's objects after applying `objects` to `current`, and notes on what was ignored. */
export function applyObjects(
  current: readonly object[],
  objects: readonly object[],
  prune: boolean,
): { readonly objects: object[]; readonly notes: string[] } {
  const notes: string[] = [];
  const byIdentity = new Map(current.map((o) => [identity(o as Record<string, unknown>), o] as const));
  const given = new Set<string>();
  for (const object of objects) {
    const o = object as Record<string, unknown>;
    const key = identity(o);
    given.add(key);
    if (o.kind === 'Pod') {
      const existing = byIdentity.get(key) as { metadata: Record<string, unknown> } | undefined;
      if (!existing) {
        notes.push(`${key.slice(4)}: not a pod of this lab (pods are created by 'lab up'); ignored`);
        continue;
      }
      const labels = ((o.metadata ?? {}) as { labels?: unknown }).labels ?? {};
      byIdentity.set(key, { ...existing, metadata: { ...existing.metadata, labels } });
    } else if (POLICY_KINDS.has(String(o.kind)) || o.kind === 'Namespace') {
      byIdentity.set(key, object);
    } else {
      notes.push(`${String(o.kind)}: not applied in the lab; ignored`);
    }
  }
  if (prune)
    for (const key of [...byIdentity.keys()])
      if (POLICY_KINDS.has(key.slice(0, key.indexOf('/'))) && !given.has(key)) byIdentity.delete(key);
  return { objects: [...byIdentity.values()], notes };
}
