/**
 * How objects are named across the tool (`Kind ns/name`, `Kind name` for cluster-scoped kinds):
 * findings, explanations and serve's sources look an object up by this name, so it is written
 * once. Calico's kinds carry their group (`NetworkPolicy.projectcalico.org`), and so do the other
 * engines' policies Palisade knows by group (`NetworkPolicy.crd.antrea.io`): neither is
 * Kubernetes' NetworkPolicy.
 */
import { otherEnginePolicy } from './other-engines.ts';

/** Kinds without a namespace: their identity is `Kind name`. */
export const CLUSTER_SCOPED: ReadonlySet<string> = new Set([
  'Namespace',
  'Node',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
  'GlobalNetworkPolicy',
  'Tier',
  'Profile',
  'CiliumClusterwideNetworkPolicy',
  'GlobalNetworkSet',
  'HostEndpoint',
  // Kinds Palisade skips, named in KIND_SKIPPED without a namespace they never have (an install's
  // RBAC and CRDs sit beside its manifests).
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'IngressClass',
  'RuntimeClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'APIService',
]);

/** The object's name as answers give it, from its raw value; undefined without kind and name. */
export function objectIdentity(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { apiVersion, kind, metadata } = value as {
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: { name?: unknown; namespace?: unknown };
  };
  if (typeof kind !== 'string' || typeof metadata?.name !== 'string') return undefined;
  const version = typeof apiVersion === 'string' ? apiVersion : '';
  const group = version.includes('/') ? version.slice(0, version.indexOf('/')) : '';
  const qualified = /(^|\.)projectcalico\.org$/.test(group)
    ? `${kind}.projectcalico.org`
    : group && otherEnginePolicy(version, kind, true)
      ? `${kind}.${group}`
      : kind;
  if (CLUSTER_SCOPED.has(kind)) return `${qualified} ${metadata.name}`;
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
  return `${qualified} ${namespace}/${metadata.name}`;
}
