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

/**
 * How a walk up the owner chain sees a workload object of the input: present, with its own
 * controller (or none); undefined when the input does not hold it.
 */
export type OwnerLookup = (key: string) => { readonly owner: WorkloadRef | undefined } | undefined;

/** A workload's key in owner lookups: `namespace/Kind/name`. */
export function workloadKey(namespace: string, kind: string, name: string): string {
  return `${namespace}/${kind}/${name}`;
}

/**
 * The top-level workload of an object whose controller is `start`: owners are followed while the
 * input holds them, and a missing ReplicaSet is known as its Deployment by the pod's
 * `pod-template-hash` label. `visit` sees the key of every workload the walk passes, the last
 * one included (a consumer that keeps attributions current re-resolves the objects whose walk
 * passed a workload that changed).
 */
export function topWorkload(
  namespace: string,
  start: WorkloadRef,
  labels: Endpoint['labels'],
  lookup: OwnerLookup,
  visit?: (key: string) => void,
): WorkloadRef {
  let current = start;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const here = workloadKey(namespace, current.kind, current.name);
    visit?.(here);
    const present = lookup(here);
    if (present) {
      if (!present.owner) return current;
      current = present.owner;
      continue;
    }
    const deployment = deploymentOfReplicaSet(current, labels);
    if (!deployment) return current;
    current = deployment;
  }
  return current;
}

/**
 * Whether a workload's pod template is an endpoint of its own, given its top workload: only
 * while none of the top workload's pods is in the input, and only for the top workload itself
 * or when the top workload is not in the input (else the top's own template stands for it).
 */
export function templateStandsAlone(
  endpoint: Pick<Endpoint, 'kind' | 'name'>,
  top: WorkloadRef,
  topHasPods: boolean,
  topPresent: boolean,
): boolean {
  if (topHasPods) return false;
  const isTop = top.kind === endpoint.kind && top.name === endpoint.name;
  return isTop || !topPresent;
}

/** Endpoints with their workload set, without the templates that running pods stand for. */
export function attributeWorkloads(entries: readonly OwnedEndpoint[]): Omit<Endpoint, 'id'>[] {
  // Workload objects in the input and whom they name as their controller.
  const ownerOf = new Map<string, { owner: WorkloadRef | undefined }>();
  for (const { endpoint, owner } of entries)
    if (endpoint.kind !== 'Pod')
      ownerOf.set(workloadKey(endpoint.namespace, endpoint.kind, endpoint.name), { owner });
  const lookup: OwnerLookup = (key) => ownerOf.get(key);

  const resolved = entries.map(({ endpoint, owner }) => {
    if (endpoint.kind === 'Pod') {
      return owner
        ? { endpoint, workload: topWorkload(endpoint.namespace, owner, endpoint.labels, lookup) }
        : { endpoint };
    }
    const self = { kind: endpoint.kind, name: endpoint.name };
    return {
      endpoint,
      workload: owner ? topWorkload(endpoint.namespace, owner, endpoint.labels, lookup) : self,
    };
  });

  const withPods = new Set<string>();
  for (const { endpoint, workload } of resolved)
    if (endpoint.kind === 'Pod' && workload)
      withPods.add(workloadKey(endpoint.namespace, workload.kind, workload.name));

  const result: Omit<Endpoint, 'id'>[] = [];
  for (const { endpoint, workload } of resolved) {
    if (!workload) {
      result.push(endpoint);
      continue;
    }
    const topKey = workloadKey(endpoint.namespace, workload.kind, workload.name);
    if (
      endpoint.kind !== 'Pod' &&
      !templateStandsAlone(endpoint, workload, withPods.has(topKey), ownerOf.has(topKey))
    )
      continue;
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
