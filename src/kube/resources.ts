/**
 * The kinds Palisade reads from a cluster: what policy needs (namespaces, pods, nodes, the
 * policies) and the workloads whose pod templates stand for pods, with the API paths to list and
 * watch them. The cluster policy kinds are CRDs a cluster may not have.
 */
import type { ResourceKind, ServedResource } from './types.ts';

const core = (kind: string, plural: string, namespaced: boolean): ResourceKind => ({
  kind,
  group: '',
  versions: ['v1'],
  plural,
  namespaced,
  optional: false,
});

const grouped = (kind: string, group: string, plural: string, namespaced: boolean): ResourceKind => ({
  kind,
  group,
  versions: ['v1'],
  plural,
  namespaced,
  optional: false,
});

const crd = (kind: string, version: string, plural: string): ResourceKind => ({
  kind,
  group: 'policy.networking.k8s.io',
  versions: [version],
  plural,
  namespaced: false,
  optional: true,
});

/** Policy inputs, in the order a reader should list them (namespaces first, pods last: the biggest). */
export const POLICY_RESOURCES: readonly ResourceKind[] = [
  core('Namespace', 'namespaces', false),
  core('Node', 'nodes', false),
  grouped('NetworkPolicy', 'networking.k8s.io', 'networkpolicies', true),
  crd('AdminNetworkPolicy', 'v1alpha1', 'adminnetworkpolicies'),
  crd('BaselineAdminNetworkPolicy', 'v1alpha1', 'baselineadminnetworkpolicies'),
  crd('ClusterNetworkPolicy', 'v1alpha2', 'clusternetworkpolicies'),
  core('Pod', 'pods', true),
];

/** Workloads: their pod templates stand for their pods (and attribute pods to them). */
export const WORKLOAD_RESOURCES: readonly ResourceKind[] = [
  grouped('Deployment', 'apps', 'deployments', true),
  grouped('ReplicaSet', 'apps', 'replicasets', true),
  grouped('StatefulSet', 'apps', 'statefulsets', true),
  grouped('DaemonSet', 'apps', 'daemonsets', true),
  core('ReplicationController', 'replicationcontrollers', true),
  grouped('Job', 'batch', 'jobs', true),
  grouped('CronJob', 'batch', 'cronjobs', true),
];

export const ALL_RESOURCES: readonly ResourceKind[] = [...POLICY_RESOURCES, ...WORKLOAD_RESOURCES];

/** `/api/v1/pods`, `/apis/apps/v1/namespaces/shop/deployments`… */
export function collectionPath(served: ServedResource, namespace?: string): string {
  const base = served.resource.group
    ? `/apis/${served.resource.group}/${served.version}`
    : `/api/${served.version}`;
  const scoped = served.resource.namespaced && namespace !== undefined;
  return `${base}${scoped ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${served.resource.plural}`;
}

/** The path of one object, which is also how diagnostics name an object read from the API. */
export function objectPath(served: ServedResource, namespace: string | undefined, name: string): string {
  return `${collectionPath(served, served.resource.namespaced ? (namespace ?? 'default') : undefined)}/${encodeURIComponent(name)}`;
}
