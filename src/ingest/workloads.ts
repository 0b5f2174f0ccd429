/**
 * Pods belong to workloads. A pod's controller (`metadata.ownerReferences`) is followed up the
 * chain the input holds — Pod → ReplicaSet → Deployment, Pod → Job → CronJob — to the top-level
 * workload, which analysis reports the pod under. A ReplicaSet missing from the input is still
 * recognized as a Deployment's when the pod carries the `pod-template-hash` label the
 * Deployment controller names it with (`<deployment>-<hash>`), as `kubectl get pods -o yaml`
 * alone shows.
 *
 * A workload's pod template stands for its pods only while none is running: once pods of a
 * workload are in the input, its template (and the templates of the ReplicaSets or Jobs under
 * it) are no longer endpoints of their own, so one application is one workload, not three.
 *
 * Pure and order-independent, so every source (files, the API) attributes the same way.
 */
import type { Endpoint, WorkloadRef } from '../model/types.ts';

/** An endpoint as decoded, with the controller its object names. */
export interface OwnedEndpoint {
  readonly endpoint: Omit<Endpoint, 'id'>;
  readonly owner?: WorkloadRef;
}

/** The label the Deployment controller puts on a ReplicaSet's pods (and in the ReplicaSet's name). */
const POD_TEMPLATE_HASH = 'pod-template-hash';
/** Owner chains longer than this are cycles or nonsense; the walk stops there. */
const MAX_CHAIN = 16;

/** Endpoints with their workload set, without the templates that running pods stand for. */
export function attributeWorkloads(entries: readonly OwnedEndpoint[]): Omit<Endpoint, 'id'>[] {
  // Workload objects in the input and whom they name as their controller.
  const ownerOf = new Map<string, WorkloadRef | undefined>();
  for (const { endpoint, owner } of entries)
    if (endpoint.kind !== 'Pod') ownerOf.set(key(endpoint.namespace, endpoint.kind, endpoint.name), owner);

  const top = (namespace: string, start: WorkloadRef, labels: Endpoint['labels']): WorkloadRef => {
    let current = start;
    for (let step = 0; step < MAX_CHAIN; step++) {
      const here = key(namespace, current.kind, current.name);
      if (ownerOf.has(here)) {
        const next = ownerOf.get(here);
        if (!next) return current;
        current = next;
        continue;
      }
      const deployment = deploymentOfReplicaSet(current, labels);
      if (!deployment) return current;
      current = deployment;
    }
    return current;
  };

  const resolved = entries.map(({ endpoint, owner }) => {
    if (endpoint.kind === 'Pod') {
      return owner ? { endpoint, workload: top(endpoint.namespace, owner, endpoint.labels) } : { endpoint };
    }
    const self = { kind: endpoint.kind, name: endpoint.name };
    return { endpoint, workload: owner ? top(endpoint.namespace, owner, endpoint.labels) : self };
  });

  const withPods = new Set<string>();
  for (const { endpoint, workload } of resolved)
    if (endpoint.kind === 'Pod' && workload)
      withPods.add(key(endpoint.namespace, workload.kind, workload.name));

  const result: Omit<Endpoint, 'id'>[] = [];
  for (const { endpoint, workload } of resolved) {
    if (!workload) {
      result.push(endpoint);
      continue;
    }
    const topKey = key(endpoint.namespace, workload.kind, workload.name);
    if (endpoint.kind !== 'Pod') {
      if (withPods.has(topKey)) continue; // its running pods stand for it
      const isTop = workload.kind === endpoint.kind && workload.name === endpoint.name;
      if (!isTop && ownerOf.has(topKey)) continue; // the top workload's own template stands for it
    }
    result.push({ ...endpoint, workload });
  }
  return result;
}

/** `web-5d8f7c9b4` with pods labelled `pod-template-hash: 5d8f7c9b4` is Deployment `web`'s. */
function deploymentOfReplicaSet(owner: WorkloadRef, labels: Endpoint['labels']): WorkloadRef | undefined {
  if (owner.kind !== 'ReplicaSet') return undefined;
  const hash = labels[POD_TEMPLATE_HASH];
  if (!hash || !owner.name.endsWith(`-${hash}`)) return undefined;
  const name = owner.name.slice(0, -hash.length - 1);
  return name ? { kind: 'Deployment', name } : undefined;
}

function key(namespace: string, kind: string, name: string): string {
  return `${namespace}/${kind}/${name}`;
}
