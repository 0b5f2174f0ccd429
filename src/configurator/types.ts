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
 * Ordered cluster policy for one pod and direction: the Admin tier's rules and the Baseline
 * tier's, each list in precedence order (every rule carries its precedence key), actions permit,
 * deny or pass. A side is decided by the first matching Admin rule (permit, deny); pass or no
 * match goes to NetworkPolicy (the `ingress`/`egress` table, final when present), else to the
 * first matching Baseline rule, else permit.
 */
export interface TieredTable {
  /** Content hash: pods with equal tiers share one. */
  readonly id: string;
  readonly admin: readonly Rule[];
  readonly baseline: readonly Rule[];
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
  return pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',');
}

/** A group reference in a rule: an address group, or one named-port partition of it (`key#port`). Label values and selector keys never contain '#'. */
export const PARTITION_SEPARATOR = '#';
