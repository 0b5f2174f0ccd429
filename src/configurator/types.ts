/**
 * Contracts of the configurator: per-pod ingress and egress rule tables, from the pod's point
 * of view. Ingress tables police traffic to the pod (rules set the source net), egress tables
 * traffic from it (rules set the destination net). In Contiv's vswitch terms these are the
 * "egress" and "ingress" sides respectively. No table means the pod is not isolated in that
 * direction.
 */
import type { Rule, RuleTable } from '../model/rule.ts';
import type { Endpoint } from '../model/types.ts';

/**
 * Ordered policy for one pod and direction: the rules of the tiers before NetworkPolicy's
 * (`admin`: the Admin tier, and Calico's tiers of a lower order) and of those after it
 * (`baseline`: Baseline, Calico's tiers of a higher order, Calico's profiles), each list in
 * precedence order (every rule carries its precedence key), actions permit, deny or pass. A side
 * is decided by the first matching rule of `admin` (permit, deny); a pass skips to the next tier
 * (`adminBreaks`), or when there is none leaves the list; no match goes to NetworkPolicy (the
 * `ingress`/`egress` table, final when present), else to `baseline` the same way, else permit.
 * A tier whose default action denies ends in a deny-everything rule. When Calico's or Cilium's
 * policies sit in NetworkPolicy's tier, that tier is compiled into `admin` too
 * (`inlinesNetworkPolicy`): its NetworkPolicy permits among them, and no NetworkPolicy table.
 */
export interface TieredTable {
  /** Content hash: pods with equal tiers share one. */
  readonly id: string;
  readonly admin: readonly Rule[];
  readonly baseline: readonly Rule[];
  /**
   * Where each tier after the first starts in `admin`, ascending: a pass at index i goes on at
   * the first start above i, or leaves the list. Absent when no pass needs it (every pass is in
   * the list's last tier), so a reader that ignores it is exact.
   */
  readonly adminBreaks?: readonly number[];
  readonly baselineBreaks?: readonly number[];
  /** NetworkPolicy's tier is compiled into `admin`: the pod has no NetworkPolicy table this way. */
  readonly inlinesNetworkPolicy?: boolean;
}

/** Where a pass at `index` of a list goes on: the next tier's start, or the list's length (leave it). */
export function passTarget(breaks: readonly number[] | undefined, index: number, length: number): number {
  if (breaks) for (const start of breaks) if (start > index) return start;
  return length;
}

export interface PodTables {
  readonly ingress?: RuleTable;
  readonly egress?: RuleTable;
  readonly ingressTiers?: TieredTable;
  readonly egressTiers?: TieredTable;
}

/**
 * A pod's container ports as text: what its ingress tables depend on besides the selecting
 * policies, since named ports resolve on the destination pod.
 */
export function portsKey(pod: Endpoint): string {
  // Made once per ports array (endpoints are immutable; a changed pod is a new object): every
  // side compiled asks, and a fresh string is hashed again by each memo it keys.
  let key = portsKeys.get(pod.ports);
  if (key === undefined)
    portsKeys.set(
      pod.ports,
      (key = pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',')),
    );
  return key;
}
const portsKeys = new WeakMap<readonly Endpoint['ports'][number][], string>();

/** A group reference in a rule: an address group, or one named-port partition of it (`key#port`). Label values and selector keys never contain '#'. */
export const PARTITION_SEPARATOR = '#';

/**
 * A datapath met compiled policy it has no form for (a pass to a later tier, NetworkPolicy's
 * tier compiled among Calico's or Cilium's policies, Cilium's blocks outside the cluster): it
 * refuses the input rather than enforce something else than the reference evaluator would.
 */
export class UnsupportedPolicyError extends Error {}

/** What of `tiers` needs more than one Admin and one Baseline list with pass leaving them, if anything. */
export function beyondTwoTiers(tiers: TieredTable): string | undefined {
  if (tiers.adminBreaks || tiers.baselineBreaks) return "a Pass to a later tier (Calico's tiers)";
  if (tiers.inlinesNetworkPolicy) return "Calico's or Cilium's policies beside NetworkPolicy in its tier";
  const outside = (rule: Rule): boolean => rule.src.kind === 'outside' || rule.dst.kind === 'outside';
  if (tiers.admin.some(outside) || tiers.baseline.some(outside))
    return "rules for addresses outside the cluster only (Cilium's world and CIDR rules)";
  return undefined;
}
