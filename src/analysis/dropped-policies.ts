/**
 * Network policies (namespaced or cluster-scoped) dropped as invalid that would have selected an
 * endpoint (issue 19 §1.5): `check` and `explain` name them next to their answer, which is given
 * without them — a user who wrote such a policy expects it to apply, and the diagnostic alone is
 * easy to miss among others, or to read as concerning another endpoint.
 */
import { clusterPolicyLabel, subjectSelects } from '../model/cluster-policy.ts';
import { selectorMatches } from '../model/selector.ts';
import type { Cluster, Endpoint, RejectedPolicy } from '../model/types.ts';

/** A dropped policy that concerns one endpoint in one direction. */
export interface DroppedPolicy {
  /**
   * `ns/name`, or `calico/ns/name` and `cilium/ns/name` for Calico's and Cilium's; cluster-scoped
   * ones as explanations name them (`gnp/name`, `ccnp/name`, `anp/name`, …).
   */
  readonly policy: string;
  readonly direction: 'ingress' | 'egress';
  /** The endpoint it would have selected (`ns/name`). */
  readonly endpoint: string;
  /** False when its pod selector (or subject) was invalid too: it might have selected the endpoint. */
  readonly certain: boolean;
  /** Why it was dropped, e.g. `spec.ingress[0].from[0].ipBlock.cidr: …`. */
  readonly problem: string;
  /** `file:line:column`, when known. */
  readonly location?: string;
}

/**
 * The dropped policies that would have selected one of `endpoints` for `direction` (each policy
 * once, with the first endpoint it concerns). Host-network pods are not subject to policy.
 */
export function droppedPoliciesFor(
  cluster: Cluster,
  endpoints: readonly Endpoint[],
  direction: 'ingress' | 'egress',
): DroppedPolicy[] {
  const rejected = cluster.rejectedPolicies ?? [];
  if (rejected.length === 0) return [];
  const found: DroppedPolicy[] = [];
  for (const policy of rejected) {
    if (!(direction === 'ingress' ? policy.affectsIngress : policy.affectsEgress)) continue;
    const endpoint = endpoints.find((e) => !e.hostNetwork && wouldSelect(cluster, policy, e));
    if (endpoint) found.push(dropped(policy, direction, endpoint));
  }
  return found;
}

/** Whether the policy would have selected the pod, as far as its selectors could be read. */
function wouldSelect(cluster: Cluster, policy: RejectedPolicy, e: Endpoint): boolean {
  if (policy.scope === 'cluster') {
    const namespaceLabels = cluster.namespaces.get(e.namespace)?.labels;
    return policy.subjects?.some((subject) => subjectSelects(subject, namespaceLabels, e)) ?? true;
  }
  if (e.namespace !== policy.namespace) return false;
  if (policy.podSelector !== undefined) return selectorMatches(policy.podSelector, e.labels);
  return policy.anyOf?.some((selector) => selectorMatches(selector, e.labels)) ?? true;
}

/**
 * How answers name a dropped policy, as explanations name the valid one: `ns/name`,
 * `calico/ns/name`, `gnp/name`, …
 */
function rejectedPolicyLabel(policy: RejectedPolicy): string {
  if (policy.scope === 'cluster') return clusterPolicyLabel({ kind: policy.clusterKind, name: policy.name });
  return `${policy.engine ? `${policy.engine}/` : ''}${policy.namespace}/${policy.name}`;
}

function dropped(policy: RejectedPolicy, direction: 'ingress' | 'egress', endpoint: Endpoint): DroppedPolicy {
  const where = policy.location;
  return {
    policy: rejectedPolicyLabel(policy),
    direction,
    endpoint: endpoint.id,
    certain:
      policy.scope === 'cluster'
        ? policy.subjects !== undefined
        : policy.podSelector !== undefined || policy.anyOf !== undefined,
    problem: policy.problem,
    ...(where ? { location: `${where.file}:${where.line}:${where.column}` } : {}),
  };
}

/** One sentence: `shop/broken (broken.yaml:4:3) was dropped as invalid (…) and would have selected shop/api for ingress; the answer is without it`. */
export function droppedPolicyText(d: DroppedPolicy): string {
  const where = d.location ? ` (${d.location})` : '';
  const would = d.certain ? 'would have selected' : 'might have selected (its selector is invalid too)';
  return `${d.policy}${where} was dropped as invalid — ${d.problem} — and ${would} ${d.endpoint} for ${d.direction}; the answer is without it`;
}
