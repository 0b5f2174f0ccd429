/**
 * The one precedence order of ordered policy, shared by the reference evaluator and the compiler
 * so they cannot disagree: tier, then priority, then a deterministic tie-break between policies of
 * equal priority, then rule order.
 *
 * Every rule gets a dense integer key (below 2^53, so exact in a JS number) that sorts in that
 * order. The tie-break is a hash of `Kind/name` rather than a rank among the current policies,
 * so adding or removing a policy never changes the key of another: inserting is O(1), nothing is
 * renumbered. The API leaves the order of equal priorities to the implementation; Palisade warns
 * when such policies overlap (PRIORITY_TIE) and documents this order.
 */
import { clusterPolicyKey, type ClusterPolicy, type Tier } from './cluster-policy.ts';

/** Bits of each key field, lowest first. */
const RULE_BITS = 7; // ANP allows 100 rules per direction, CNP 25
const TIE_BITS = 24;
const PRIORITY_BITS = 10; // 0–1000, plus 1001 for BaselineAdminNetworkPolicy

/** Where each tier sits; NetworkPolicy has no rules here but occupies the middle rank. */
export const TIER_RANK: Readonly<Record<Tier | 'NetworkPolicy', number>> = {
  Admin: 0,
  NetworkPolicy: 1,
  Baseline: 2,
};

/** BaselineAdminNetworkPolicy has no priority; it ranks after every Baseline ClusterNetworkPolicy. */
export const BANP_PRIORITY = 1001;

/** FNV-1a, cut to TIE_BITS bits: stable across runs and platforms. */
export function tieBreak(policy: Pick<ClusterPolicy, 'kind' | 'name'>): number {
  const text = clusterPolicyKey(policy);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> (32 - TIE_BITS);
}

/** The key of a policy's first rule; its rule `i` has key `policyKey + i`. */
export function policyPrecedenceKey(
  policy: Pick<ClusterPolicy, 'kind' | 'name' | 'tier' | 'priority'>,
): number {
  const tier = TIER_RANK[policy.tier];
  return ((tier * 2 ** PRIORITY_BITS + policy.priority) * 2 ** TIE_BITS + tieBreak(policy)) * 2 ** RULE_BITS;
}

export function rulePrecedenceKey(
  policy: Pick<ClusterPolicy, 'kind' | 'name' | 'tier' | 'priority'>,
  ruleIndex: number,
): number {
  return policyPrecedenceKey(policy) + ruleIndex;
}

/** Evaluation order of policies: by key, and by kind/name in the (unlikely) case two keys collide. */
export function comparePolicies(a: ClusterPolicy, b: ClusterPolicy): number {
  const byKey = policyPrecedenceKey(a) - policyPrecedenceKey(b);
  if (byKey !== 0) return byKey;
  const ka = clusterPolicyKey(a);
  const kb = clusterPolicyKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
