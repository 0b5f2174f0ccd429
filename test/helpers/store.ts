/**
 * The store from a test's side: everything a reader outside `state/` can ask it, as one value to
 * compare, and one pipeline change applied to it as the pipeline applies it.
 */
import type { NetworkPolicy } from '../../src/model/types.ts';
import { policyKey } from '../../src/model/types.ts';
import type { PipelineChange } from '../../src/pipeline/index.ts';
import type { ClusterState, ReadonlyStore, StateDelta } from '../../src/state/index.ts';

/** Everything a reader outside `state/` can ask the store, as one comparable value. */
export function observe(store: ReadonlyStore): unknown {
  const sorted = <T>(items: Iterable<T>): T[] => [...items].sort();
  const pods = [...store.allPods()].sort((a, b) => a.id.localeCompare(b.id));
  const policies = [...store.allPolicies()].sort((a, b) => policyKey(a).localeCompare(policyKey(b)));
  const namespaces = sorted(new Set([...pods, ...policies].map((o) => o.namespace)));
  const policyKeysOf = (list: readonly NetworkPolicy[]): string[] => list.map(policyKey);
  return {
    pods: pods.map((p) => {
      const selection = store.selection(p);
      return {
        id: p.id,
        ingress: policyKeysOf(selection.ingress),
        egress: policyKeysOf(selection.egress),
        all: policyKeysOf(selection.all),
      };
    }),
    policies: policies.map((p) => ({
      key: policyKey(p),
      selects: sorted(store.podsSelectedBy(p)),
      groups: sorted(store.groupsOfPolicy(policyKey(p))),
    })),
    namespaces: namespaces.map((name) => ({
      name,
      labels: store.namespaceLabels(name),
      pods: sorted(store.podsInNamespace(name)),
    })),
    groups: sorted(store.groupKeys()).map((key) => {
      const group = store.group(key);
      return {
        key,
        members: [...(group?.members.values() ?? [])]
          .map((m) => `${m.pod} ${m.ips.map((ip) => ip.value).join(',')} ${m.port ?? ''}`)
          .sort(),
        ports: [...(group?.ports ?? [])].sort((a, b) => a[0] - b[0]),
        usedBy: sorted(store.policiesOfGroup(key)),
      };
    }),
    clusterPolicies: store
      .allClusterPolicies()
      .map((p) => ({ name: p.name, subjects: sorted(store.subjectsOf(p)) })),
    nodes: store.nodes().map((n) => n.name),
  };
}

/** Applies one change to the store, as the pipeline does. */
export function applyChange(store: ClusterState, change: PipelineChange): StateDelta {
  switch (change.type) {
    case 'resync':
      return store.resync(change.cluster);
    case 'upsert-namespace':
      return store.upsertNamespace(change.namespace);
    case 'delete-namespace':
      return store.deleteNamespace(change.name);
    case 'upsert-pod':
      return store.upsertPod(change.pod);
    case 'delete-pod':
      return store.deletePod(change.id);
    case 'upsert-policy':
      return store.upsertPolicy(change.policy);
    case 'delete-policy':
      return store.deletePolicy(change.key);
    case 'upsert-cluster-policy':
      return store.upsertClusterPolicy(change.policy);
    case 'delete-cluster-policy':
      return store.deleteClusterPolicy(change.key);
    case 'upsert-node':
      return store.upsertNode(change.node);
    case 'delete-node':
      return store.deleteNode(change.name);
  }
}
