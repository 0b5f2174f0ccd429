/**
 * Pod sides whose ordered lists would hold nothing but permits (see `permitSideOf`): the
 * configurator compiles those to NetworkPolicy-style tables (configurator.ts `permitTable`).
 */
import { DEFAULT_TIER, policyIsolates, type TierSpec } from '../model/cluster-policy.ts';
import type { ClusterPolicy } from '../model/types.ts';
import type { PlanSelection, TierSelection } from '../state/index.ts';
import { dependenciesOf, type Dependencies } from './expansion-memos.ts';

type Direction = 'ingress' | 'egress';

/**
 * The side's policies when its ordered lists would hold nothing but permits: only NetworkPolicy's
 * tier selects the pod, through Calico's or Cilium's policies there (the tiers before and after
 * it select nothing), and every rule of theirs for the direction allows, with a peer a plain
 * table can hold. A first match over permits closed by a deny answers exactly as their union
 * does, so such a side compiles to a NetworkPolicy-style table (configurator.ts) — shared,
 * interned, with the pod's own node left to the datapath as NetworkPolicy's is — instead of a
 * list built per side. Most Calico and Cilium policy is written so: allows in the default tier.
 */
export function permitSideOf(planned: PlanSelection, direction: Direction): PermitSide | undefined {
  const at = defaultTierAt(planned.plan);
  if (at < 0) return undefined;
  const selection = planned.selections[at] as TierSelection;
  if (selection.policies.length === 0) return undefined;
  for (let i = 0; i < planned.selections.length; i++)
    if (i !== at && (planned.selections[i] as TierSelection).policies.length > 0) return undefined;
  const memo = permitSides[direction];
  let side = memo.get(selection);
  if (side === undefined) {
    const plain = selection.policies.every((policy) => onlyPlainPermits(policy, direction));
    side = plain
      ? {
          selection,
          isolates: selection.policies.some((policy) => policyIsolates(policy, direction)),
          dependencies: dependenciesOf(selection.policies, direction, true),
        }
      : null;
    memo.set(selection, side);
  }
  return side ?? undefined;
}

/** A side whose lists would be permits only (`permitSideOf`). */
export interface PermitSide {
  /** NetworkPolicy's tier's selection: Calico's and Cilium's policies there, each only allowing. */
  readonly selection: TierSelection;
  /** Whether one of them holds the pod to the tier (a deny closes it): else only NetworkPolicy can. */
  readonly isolates: boolean;
  readonly dependencies: Dependencies;
}

/** Per selection (interned by the store, one per slot and list of policies): its permit side, or null. */
const permitSides = {
  ingress: new WeakMap<TierSelection, PermitSide | null>(),
  egress: new WeakMap<TierSelection, PermitSide | null>(),
};

/** Where NetworkPolicy's tier is in a plan (-1: not in it). */
const defaultTierPlaces = new WeakMap<readonly TierSpec[], number>();
function defaultTierAt(plan: readonly TierSpec[]): number {
  let at = defaultTierPlaces.get(plan);
  if (at === undefined) defaultTierPlaces.set(plan, (at = plan.findIndex((t) => t.name === DEFAULT_TIER)));
  return at;
}

/**
 * Whether a policy's rules for a direction only allow, each to peers that expand to groups, CIDRs
 * or anything: pods, nodes and networks (an outside peer is a CIDR less the pods and nodes, a
 * net a plain table has no form for; a domain name is none).
 */
function onlyPlainPermits(policy: ClusterPolicy, direction: Direction): boolean {
  return policy[direction].every(
    (rule) =>
      rule.action === 'allow' &&
      rule.peers.every((peer) => peer.type === 'pods' || peer.type === 'nodes' || peer.type === 'networks'),
  );
}
