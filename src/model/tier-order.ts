/**
 * The order in which a side of a connection visits the tiers, shared by the reference evaluator
 * and the compiled path: Calico's rule (tiers by `order`, smallest first, then by name; a tier
 * without an order last — felix's TierLess), with the built-in tiers at their fixed orders —
 * Admin (kube-admin) 1,000, `default` (where NetworkPolicy sits) 1,000,000, Baseline
 * (kube-baseline) 10,000,000 — and Calico's profiles after every tier. Without Calico policy
 * this is Admin, NetworkPolicy, Baseline, as it always was.
 */
import {
  BUILT_IN_TIERS,
  PROFILES_TIER,
  tierOf,
  type ClusterPolicy,
  type TierSpec,
} from './cluster-policy.ts';

/** The built-in tiers and every tier of `policies`, in the order they are visited. */
export function tierOrder(policies: Iterable<ClusterPolicy>): TierSpec[] {
  const byName = new Map<string, TierSpec>(BUILT_IN_TIERS.map((t) => [t.name, t]));
  let profiles: TierSpec | undefined;
  for (const policy of policies) {
    if (policy.tier === PROFILES_TIER) profiles ??= tierOf(policy);
    else if (!byName.has(policy.tier)) byName.set(policy.tier, tierOf(policy));
  }
  const plan = [...byName.values()].sort(compareTiers);
  return profiles ? [...plan, profiles] : plan;
}

/** felix's TierLess: by order (none last), then by name. */
function compareTiers(a: TierSpec, b: TierSpec): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
