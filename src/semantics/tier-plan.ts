/**
 * The order in which a side of a connection visits the tiers: Calico's rule (tiers by `order`,
 * smallest first, then by name; a tier without an order last), with the built-in tiers at their
 * fixed orders — Admin (kube-admin) 1,000, `default` (where NetworkPolicy sits) 1,000,000,
 * Baseline (kube-baseline) 10,000,000 — and Calico's profiles after every tier. Without Calico
 * policy this is Admin, NetworkPolicy, Baseline, as before.
 */
import { BUILT_IN_TIERS, PROFILES_TIER, type TierSpec } from '../model/cluster-policy.ts';
import type { Cluster } from '../model/types.ts';

const plans = new WeakMap<Cluster, readonly TierSpec[]>();

const PROFILES: TierSpec = { name: PROFILES_TIER, order: Infinity, defaultAction: 'deny' };

export function tierPlan(cluster: Cluster): readonly TierSpec[] {
  let plan = plans.get(cluster);
  if (plan) return plan;
  const byName = new Map<string, TierSpec>(BUILT_IN_TIERS.map((t) => [t.name, t]));
  for (const [name, tier] of cluster.tiers ?? []) byName.set(name, tier);
  const hasProfiles = cluster.clusterPolicies.some((p) => p.tier === PROFILES_TIER);
  byName.delete(PROFILES_TIER);
  plan = [...byName.values()].sort(compareTiers);
  if (hasProfiles) plan = [...plan, PROFILES];
  plans.set(cluster, plan);
  return plan;
}

/** felix's TierLess: by order (none last), then by name. */
export function compareTiers(a: TierSpec, b: TierSpec): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
