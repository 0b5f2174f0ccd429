/**
 * The Kubernetes API layer's public entry. Nothing here imports the official client at load
 * time: `connect` and the kubeconfig resolution import it when first called.
 */
export { connect } from './client.ts';
export { KubeApiError } from './errors.ts';
export { kubeconfigAvailable, resolveKubeconfig } from './kubeconfig.ts';
export { discover } from './discovery.ts';
export { listAll, listPages, parseListBody, type ListOptions } from './list.ts';
export { Informer, type InformerHandler } from './informer.ts';
export { readCluster, type ApiObject } from './read-cluster.ts';
export { apiRawObjects, objectLocator } from './raw-objects.ts';
export {
  ALL_RESOURCES,
  POLICY_RESOURCES,
  WORKLOAD_RESOURCES,
  collectionPath,
  objectPath,
} from './resources.ts';
export type * from './types.ts';
