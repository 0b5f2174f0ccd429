/**
 * What a side of a connection visits before any rule, per endpoint and direction: the tiers of
 * the plan (semantics/tier-plan.ts) that select the endpoint, each with its policies, and at
 * NetworkPolicy's place either the default tier's members (Calico's or Cilium's policies there)
 * or NetworkPolicy's gate. It depends on the endpoint alone, not on the other side: the matrix
 * asks `isAllowed` of one endpoint against every other, and finding each tier's selection again
 * per pair (a keyed lookup per tier and direction) cost Calico's and Cilium's inputs more than
 * their rules did.
 */
import { DEFAULT_TIER, type TierSpec } from '../model/cluster-policy.ts';
import type { ClusterPolicy, Endpoint, Semantics } from '../model/types.ts';
import { selectingClusterPolicies } from './cluster-match.ts';
import { defaultTierMembers, defaultTierSide, type DefaultTierSide } from './default-tier.ts';
import type { ClusterIndex } from './match.ts';
import { tierPlan } from './tier-plan.ts';

/** One place of the walk that can decide. */
type SideStep =
  /** A tier other than NetworkPolicy's, with the policies selecting the endpoint (never none). */
  | { readonly kind: 'tier'; readonly tier: TierSpec; readonly policies: readonly ClusterPolicy[] }
  /** NetworkPolicy's tier holding Calico's or Cilium's policies too: its entries for the side. */
  | { readonly kind: 'default'; readonly side: DefaultTierSide }
  /** NetworkPolicy's tier alone: its gate decides (it depends on the other side: the own node). */
  | { readonly kind: 'networkPolicy' };

type Direction = 'ingress' | 'egress';
/** An endpoint's plans by semantics and direction (kept in the index: `ClusterIndex.sidePlans`). */
type SidePlans = Partial<Record<Semantics, Partial<Record<Direction, readonly SideStep[]>>>>;
/** Without cluster policy every side is NetworkPolicy's alone: nothing to look up per endpoint. */
const NETWORK_POLICY_ONLY: readonly SideStep[] = [{ kind: 'networkPolicy' }];

/** The endpoint's steps for a direction, in the walk's order (made once per index, endpoint, direction). */
export function sidePlan(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: Direction,
  semantics: Semantics,
): readonly SideStep[] {
  if (index.cluster.clusterPolicies.length === 0) return NETWORK_POLICY_ONLY;
  let plans = index.sidePlans.get(endpoint) as SidePlans | undefined;
  if (!plans) index.sidePlans.set(endpoint, (plans = {}));
  const bySemantics = (plans[semantics] ??= {});
  let steps = bySemantics[direction];
  if (!steps) bySemantics[direction] = steps = planSide(index, endpoint, direction, semantics);
  return steps;
}

function planSide(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: Direction,
  semantics: Semantics,
): SideStep[] {
  const steps: SideStep[] = [];
  for (const tier of tierPlan(index.cluster)) {
    if (tier.name !== DEFAULT_TIER) {
      // A tier no policy of which selects the endpoint does not match: it is not visited.
      const policies = selectingClusterPolicies(index, endpoint, direction, tier.name);
      if (policies.length > 0) steps.push({ kind: 'tier', tier, policies });
      continue;
    }
    const members =
      semantics === 'v1' ? defaultTierMembers(index, endpoint, direction, semantics) : undefined;
    steps.push(
      members ? { kind: 'default', side: defaultTierSide(members, direction) } : { kind: 'networkPolicy' },
    );
  }
  return steps;
}
