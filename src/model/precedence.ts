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
import {
  ADMIN_TIER,
  BASELINE_TIER,
  clusterPolicyKey,
  DEFAULT_TIER,
  manifestKind,
  policyEngine,
  PROFILES_TIER,
  type ClusterPolicy,
} from './cluster-policy.ts';

/** Bits of each key field, lowest first. */
const RULE_BITS = 7; // ANP allows 100 rules per direction, CNP 25
const TIE_BITS = 24;
const PRIORITY_BITS = 10; // 0–1000, plus 1001 for BaselineAdminNetworkPolicy

/** Where each tier sits; NetworkPolicy has no rules here but occupies the middle rank. */
const TIER_RANK: Readonly<Record<'Admin' | 'NetworkPolicy' | 'Baseline', number>> = {
  Admin: 0,
  NetworkPolicy: 1,
  Baseline: 2,
};
/** The rank of every other tier's rules in keys (Calico's tiers, Cilium's policies, profiles). */
const OTHER_RANK = 3;

/** BaselineAdminNetworkPolicy has no priority; it ranks after every Baseline ClusterNetworkPolicy. */
export const BANP_PRIORITY = 1001;

/** FNV-1a, cut to TIE_BITS bits: stable across runs and platforms. */
export function tieBreak(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): number {
  const text = clusterPolicyKey(policy);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> (32 - TIE_BITS);
}

type Keyed = Pick<ClusterPolicy, 'kind' | 'name' | 'namespace' | 'tier' | 'priority'>;

/**
 * The key of a policy's first rule; its rule `i` has key `policyKey + i`. For Calico's and
 * Cilium's policies, whose orders are floats without bounds, the key only names the rule (tier
 * rank 3 and a hash of the policy): lists are put in order by `comparePolicies`, never by key.
 */
function policyPrecedenceKey(policy: Keyed): number {
  // Once per policy object (they are immutable): sorting 10,000 policies asked it 280,000 times,
  // each hashing the policy's key text.
  let key = precedenceKeys.get(policy);
  if (key === undefined) precedenceKeys.set(policy, (key = computedPrecedenceKey(policy)));
  return key;
}
const precedenceKeys = new WeakMap<Keyed, number>();

function computedPrecedenceKey(policy: Keyed): number {
  const tier =
    policyEngine(policy.kind) === 'network-policy-api'
      ? (TIER_RANK[policy.tier as 'Admin' | 'Baseline'] ?? OTHER_RANK)
      : OTHER_RANK;
  const priority = tier === OTHER_RANK ? 0 : policy.priority;
  return ((tier * 2 ** PRIORITY_BITS + priority) * 2 ** TIE_BITS + tieBreak(policy)) * 2 ** RULE_BITS;
}

export function rulePrecedenceKey(policy: Keyed, ruleIndex: number): number {
  return policyPrecedenceKey(policy) + ruleIndex;
}

/** Tiers with a fixed place among themselves; others (Calico's own) are placed by their order. */
const NAMED_TIER_RANK: Readonly<Record<string, number>> = {
  [ADMIN_TIER]: 0,
  [DEFAULT_TIER]: 1,
  [BASELINE_TIER]: 2,
  [PROFILES_TIER]: 4,
};

/**
 * Calico's tie-break between policies of one order: `name/namespace/kind` as text (felix's
 * PolKVLess), so NetworkPolicy `x` (its `knp.default.x`) sorts among them by its name too.
 */
export function calicoTieText(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  return `${policy.name}/${policy.namespace ?? ''}/${manifestKind(policy.kind)}`;
}

/**
 * Evaluation order of policies within a tier: the network-policy-api's by key (priority, then a
 * hash of `Kind/name`), Calico's by order then `name/namespace/kind` as Calico sorts them, and
 * the network-policy-api's before Calico's on equal priority (Calico maps an
 * AdminNetworkPolicy's priority to its order in the kube-admin tier). Policies of different tiers
 * are kept apart (by tier name) — the walk visits tiers by their own order (TierSpec).
 */
export function comparePolicies(a: ClusterPolicy, b: ClusterPolicy): number {
  if (a.tier !== b.tier) {
    const ra = NAMED_TIER_RANK[a.tier] ?? 3;
    const rb = NAMED_TIER_RANK[b.tier] ?? 3;
    return ra - rb || (a.tier < b.tier ? -1 : 1);
  }
  const apiA = policyEngine(a.kind) === 'network-policy-api';
  const apiB = policyEngine(b.kind) === 'network-policy-api';
  if (apiA && apiB) {
    const byKey = policyPrecedenceKey(a) - policyPrecedenceKey(b);
    if (byKey !== 0) return byKey;
    return textOrder(clusterPolicyKey(a), clusterPolicyKey(b));
  }
  if (a.priority !== b.priority) return a.priority < b.priority ? -1 : 1;
  if (apiA !== apiB) return apiA ? -1 : 1;
  return textOrder(calicoTieText(a), calicoTieText(b)) || textOrder(clusterPolicyKey(a), clusterPolicyKey(b));
}

/**
 * `policies` in `comparePolicies`' order, sorted in place: each policy's texts and keys made once
 * rather than per comparison — a comparator that built `calicoTieText` twice per comparison was
 * most of sorting 10,000 policies.
 */
export function sortByPrecedence<P extends ClusterPolicy>(policies: P[]): P[] {
  const keyed = policies.map((policy) => {
    const api = policyEngine(policy.kind) === 'network-policy-api';
    return {
      policy,
      rank: NAMED_TIER_RANK[policy.tier] ?? 3,
      api,
      precedence: api ? policyPrecedenceKey(policy) : 0,
      tie: api ? '' : calicoTieText(policy),
      key: clusterPolicyKey(policy),
    };
  });
  keyed.sort((a, b) => {
    const pa = a.policy;
    const pb = b.policy;
    if (pa.tier !== pb.tier) return a.rank - b.rank || (pa.tier < pb.tier ? -1 : 1);
    if (a.api && b.api) return a.precedence - b.precedence || textOrder(a.key, b.key);
    if (pa.priority !== pb.priority) return pa.priority < pb.priority ? -1 : 1;
    if (a.api !== b.api) return a.api ? -1 : 1;
    return textOrder(a.tie, b.tie) || textOrder(a.key, b.key);
  });
  for (let i = 0; i < keyed.length; i++) policies[i] = (keyed[i] as (typeof keyed)[0]).policy;
  return policies;
}

function textOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
