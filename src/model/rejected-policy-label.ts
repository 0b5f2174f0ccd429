/**
 * How answers name a policy dropped as invalid — as they name the valid one it would have been,
 * so that a valid definition later in the input is recognised as the same policy
 * (ingest/build-cluster.ts) and a warning reads like the explanations beside it.
 */
import { clusterPolicyLabel } from './cluster-policy.ts';
import type { RejectedPolicy } from './types.ts';

/** `ns/name`, `calico/ns/name`, `cilium/ns/name`, or `gnp/name`, `ccnp/name`, `anp/name`, … */
export function rejectedPolicyLabel(
  policy: Pick<RejectedPolicy, 'clusterKind' | 'engine' | 'namespace' | 'name'>,
): string {
  if (policy.clusterKind) return clusterPolicyLabel({ kind: policy.clusterKind, name: policy.name });
  return `${policy.engine ? `${policy.engine}/` : ''}${policy.namespace}/${policy.name}`;
}
