/**
 * Pod sides whose ordered lists would hold nothing but permits (see `permitSideFor`): the
 * configurator compiles those to NetworkPolicy-style tables (configurator.ts `permitTable`).
 */
import { DEFAULT_TIER, policyIsolates, type TierSpec } from '../model/cluster-policy.ts';
import type { PlanSelection, TierSelection } from '../state/index.ts';
import { policyFacts } from '../model/cluster-policy-facts.ts';
import type { Dependencies } from './expansion-memos.ts';

type Direction = 'ingress' | 'egress';

/**
 * NetworkPolicy's tier's selection when only that tier selects the pod, through Calico's or
 * Cilium's policies there (the tiers before and after it select nothing). The side's lists hold
 * nothing but permits when, besides, every rule of theirs for the direction allows, to pods,
 * nodes, networks or blocks outside the cluster (`permitSideFor`). A first match over permits
 * closed by a deny answers exactly as their union does, so such a side compiles to a
 * NetworkPolicy-style table (configurator.ts) — shared, interned, with the pod's own node left to
 * the datapath as NetworkPolicy's is — instead of a list built per side. Most Calico and Cilium
 * policy is written so: allows in the default tier. An outside block has no form in a table: its
 * permits make the side's Admin list, which every datapath visits before the table (a permit there
 * allows, no match goes on to the table), so the side still answers as the union of its permits.
 */
export function permitSelection(planned: PlanSelection): TierSelection | undefined {
  const at = defaultTierAt(planned.plan);
  if (at < 0) return undefined;
  const selection = planned.selections[at] as TierSelection;
  if (selection.policies.length === 0) return undefined;
  for (let i = 0; i < planned.selections.length; i++)
    if (i !== at && (planned.selections[i] as TierSelection).policies.length > 0) return undefined;
  return selection;
}

/**
 * The permit side of NetworkPolicy's tier's selection (`permitSelection`), or null when a policy
 * there does more than allow, or allows a peer no table or Admin list of permits holds. Callers
 * memoize it per selection (the configurator keeps it beside the side's tables).
 */
export function permitSideFor(selection: TierSelection, direction: Direction): PermitSide | null {
  // One pass over the policies' facts (read once per policy object): each only allowing, to
  // peers a table holds, and what their rules depend on.
  let outside = false;
  let isolates = false;
  let relative = false;
  let named = false;
  let nodes = false;
  let subjectNode = false;
  for (const policy of selection.policies) {
    const facts = policyFacts(policy);
    if (!facts.permits[direction]) return null;
    outside ||= facts.outside[direction];
    isolates ||= policyIsolates(policy, direction);
    relative ||= facts.relative;
    named ||= facts.named[direction];
    nodes ||= facts.nodes;
    subjectNode ||= facts.subjectNode;
  }
  return { selection, isolates, outside, dependencies: { relative, named, nodes, subjectNode } };
}

/** A side whose lists would be permits only (`permitSideFor`). */
export interface PermitSide {
  /** NetworkPolicy's tier's selection: Calico's and Cilium's policies there, each only allowing. */
  readonly selection: TierSelection;
  /** Whether one of them holds the pod to the tier (a deny closes it): else only NetworkPolicy can. */
  readonly isolates: boolean;
  /**
   * Whether a rule allows an outside block (Cilium's CIDR rules and `world`: a CIDR less the pods
   * and nodes), which a table has no form for: those permits go before the table, in the side's
   * Admin list (configurator.ts `permitTable`).
   */
  readonly outside: boolean;
  readonly dependencies: Dependencies;
}

/** Where NetworkPolicy's tier is in a plan (-1: not in it). */
const defaultTierPlaces = new WeakMap<readonly TierSpec[], number>();
function defaultTierAt(plan: readonly TierSpec[]): number {
  let at = defaultTierPlaces.get(plan);
  if (at === undefined) defaultTierPlaces.set(plan, (at = plan.findIndex((t) => t.name === DEFAULT_TIER)));
  return at;
}
