/**
 * Contracts of the pipeline: the changes it accepts and what applying them did.
 */
import type { Cluster, Endpoint, Namespace, NetworkPolicy } from '../model/types.ts';

export type PipelineChange =
  | { readonly type: 'resync'; readonly cluster: Cluster }
  | { readonly type: 'upsert-namespace'; readonly namespace: Namespace }
  | { readonly type: 'delete-namespace'; readonly name: string }
  | { readonly type: 'upsert-pod'; readonly pod: Endpoint }
  | { readonly type: 'delete-pod'; readonly id: string }
  | { readonly type: 'upsert-policy'; readonly policy: NetworkPolicy }
  | { readonly type: 'delete-policy'; readonly key: string };

export interface ApplyResult {
  readonly revision: number;
  /** Pods whose tables were recomputed. */
  readonly affected: number;
  /** Renderer changes, by renderer name. */
  readonly changes: ReadonlyMap<string, unknown>;
}
