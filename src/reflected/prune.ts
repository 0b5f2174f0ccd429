/**
 * An API object reduced to what policy reads — labels, addresses, container ports, node, phase,
 * owners, policy specs whole and a policy's staged mark — so that changes policy cannot see (a pod's conditions and
 * container statuses, a node's heartbeats, a workload's replica counts, resourceVersion,
 * managedFields) give the same value and write nothing. Objects are rebuilt field by field in a
 * fixed order, so equal content is equal text. A property test holds that decoding the reduced
 * object gives the same model object as decoding the original.
 */
import type { RawApiObject } from '../kube/types.ts';
import { LEGACY_ISOLATION_ANNOTATION, STAGED_ANNOTATION } from '../model/types.ts';

type Json = Record<string, unknown>;

const POLICY_KINDS = new Set([
  'NetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);
const NODE_ADDRESS_TYPES = new Set(['InternalIP', 'ExternalIP']);

/** The reduced object (apiVersion, kind, metadata and the fields of its kind that policy reads). */
export function pruneObject(object: RawApiObject, namespace: string | undefined): Json {
  const kind = object.kind as string;
  const out: Json = { apiVersion: object.apiVersion, kind, metadata: pruneMetadata(object, namespace) };
  const spec = asObject(object.spec);
  const status = asObject(object.status);
  if (POLICY_KINDS.has(kind)) {
    if (object.spec !== undefined) out.spec = object.spec;
  } else if (kind === 'Pod') {
    if (spec) out.spec = prunePodSpec(spec);
    const kept = status ? pick(status, ['phase', 'podIP', 'podIPs', 'hostIP', 'hostIPs']) : {};
    // No status field at all when none of its policy fields is set: adding conditions changes nothing.
    if (Object.keys(kept).length > 0) out.status = kept;
  } else if (kind === 'Node') {
    const addresses = status?.addresses;
    if (Array.isArray(addresses)) {
      const kept = (addresses as unknown[])
        .map(asObject)
        .filter((a): a is Json => a !== undefined && NODE_ADDRESS_TYPES.has(a.type as string))
        .map((a) => ({ type: a.type, address: a.address }));
      out.status = { addresses: kept };
    }
  } else if (kind === 'CronJob') {
    const template = asObject(asObject(asObject(spec?.jobTemplate)?.spec)?.template);
    if (template) out.spec = { jobTemplate: { spec: { template: pruneTemplate(template) } } };
  } else if (kind !== 'Namespace') {
    // Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job: the pod template.
    const template = asObject(spec?.template);
    if (template) out.spec = { template: pruneTemplate(template) };
  }
  return out;
}

function pruneMetadata(object: RawApiObject, namespace: string | undefined): Json {
  const metadata = asObject(object.metadata) ?? {};
  const out: Json = { name: metadata.name };
  if (namespace !== undefined) out.namespace = namespace;
  if (metadata.labels !== undefined) out.labels = metadata.labels;
  const annotations = asObject(metadata.annotations);
  const legacy = annotations?.[LEGACY_ISOLATION_ANNOTATION];
  if (legacy !== undefined) out.annotations = { [LEGACY_ISOLATION_ANNOTATION]: legacy };
  // A policy's staged mark: dropping it would have the agents enforce a candidate.
  const staged = annotations?.[STAGED_ANNOTATION];
  if (staged !== undefined && POLICY_KINDS.has(object.kind as string))
    out.annotations = { [STAGED_ANNOTATION]: staged };
  // A pod's or policy's uid never changes (Kuryr tags Neutron's objects with it).
  if (
    (POLICY_KINDS.has(object.kind as string) || object.kind === 'Pod') &&
    typeof metadata.uid === 'string'
  ) {
    out.uid = metadata.uid;
  }
  // A policy's generation moves only with its spec: consumers can record what they realized (Kuryr).
  if (POLICY_KINDS.has(object.kind as string) && metadata.generation !== undefined) {
    out.generation = metadata.generation;
  }
  if (Array.isArray(metadata.ownerReferences)) {
    out.ownerReferences = (metadata.ownerReferences as unknown[])
      .map(asObject)
      .filter((o): o is Json => o !== undefined)
      .map((o) => pick(o, ['apiVersion', 'kind', 'name', 'uid', 'controller']));
  }
  return out;
}

function pruneTemplate(template: Json): Json {
  const out: Json = {};
  const labels = asObject(template.metadata)?.labels;
  if (labels !== undefined) out.metadata = { labels };
  const spec = asObject(template.spec);
  if (spec) out.spec = prunePodSpec(spec);
  return out;
}

/**
 * Node, host network, service account (Calico's and Cilium's selectors read it) and every
 * container's ports (containers kept, in order, so field paths stay).
 */
function prunePodSpec(spec: Json): Json {
  const out: Json = {};
  if (spec.nodeName !== undefined) out.nodeName = spec.nodeName;
  if (spec.hostNetwork !== undefined) out.hostNetwork = spec.hostNetwork;
  if (spec.serviceAccountName !== undefined) out.serviceAccountName = spec.serviceAccountName;
  for (const field of ['containers', 'initContainers'] as const) {
    const containers = spec[field];
    if (!Array.isArray(containers)) {
      if (containers !== undefined) out[field] = containers;
      continue;
    }
    out[field] = (containers as unknown[]).map((c) => {
      const container = asObject(c);
      if (!container) return c;
      const kept: Json = pick(container, ['name', 'restartPolicy']);
      if (Array.isArray(container.ports)) {
        kept.ports = (container.ports as unknown[]).map((p) => {
          const port = asObject(p);
          return port ? pick(port, ['name', 'containerPort', 'protocol']) : p;
        });
      } else if (container.ports !== undefined) {
        kept.ports = container.ports;
      }
      return kept;
    });
  }
  return out;
}

function pick(object: Json, fields: readonly string[]): Json {
  const out: Json = {};
  for (const field of fields) if (object[field] !== undefined) out[field] = object[field];
  return out;
}

function asObject(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}
