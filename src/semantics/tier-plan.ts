/**
 * The order in which a side of a connection visits the tiers (model/tier-order.ts): the
 * built-in ones and every tier a policy of the cluster is in, by order.
 */
import type { TierSpec } from '../model/cluster-policy.ts';
import { tierOrder } from '../model/tier-order.ts';
import type { Cluster } from '../model/types.ts';

const plans = new WeakMap<Cluster, readonly TierSpec[]>();

export function tierPlan(cluster: Cluster): readonly TierSpec[] {
  let plan = plans.get(cluster);
  if (!plan) plans.set(cluster, (plan = tierOrder(cluster.clusterPolicies)));
  return plan;
}
