/**
 * Contracts of the configurator: per-pod ingress and egress rule tables, from the pod's point
 * of view. Ingress tables police traffic to the pod (rules set the source net), egress tables
 * traffic from it (rules set the destination net). In Contiv's vswitch terms these are the
 * "egress" and "ingress" sides respectively. No table means the pod is not isolated in that
 * direction.
 */
import type { RuleTable } from '../model/rule.ts';

export interface PodTables {
  readonly ingress?: RuleTable;
  readonly egress?: RuleTable;
}

/** A group reference in a rule: an address group, or one named-port partition of it (`key#port`). Label values and selector keys never contain '#'. */
export const PARTITION_SEPARATOR = '#';
