/**
 * Contracts of the pipeline: the changes it accepts and what applying them did.
 */
import type { Cluster, ClusterPolicy, Endpoint, Namespace, NetworkPolicy, NodeInfo } from '../model/types.ts';

export type PipelineChange =
  | { readonly type: 'resync'; readonly cluster: Cluster }
  | { readonly type: 'upsert-namespace'; readonly namespace: Namespace }
  | { readonly type: 'delete-namespace'; readonly name: string }
  | { readonly type: 'upsert-pod'; readonly pod: Endpoint }
  | { readonly type: 'delete-pod'; readonly id: string }
  | { readonly type: 'upsert-policy'; readonly policy: NetworkPolicy }
  | { readonly type: 'delete-policy'; readonly key: string }
  | { readonly type: 'upsert-cluster-policy'; readonly policy: ClusterPolicy }
  /** `Kind/name` (model/cluster-policy.ts clusterPolicyKey). */
  | { readonly type: 'delete-cluster-policy'; readonly key: string }
  | { readonly type: 'upsert-node'; readonly node: NodeInfo }
  | { readonly type: 'delete-node'; readonly name: string };

export interface ApplyResult {
  readonly revision: number;
  /** Pods whose tables were recomputed. */
  readonly affected: number;
  /** Renderer changes, by renderer name. */
  readonly changes: ReadonlyMap<string, unknown>;
}
