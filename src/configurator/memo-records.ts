/**
 * The records the configurator memoizes its tables in (configurator.ts): NetworkPolicy's prepared
 * template rules, a selection key's tables by variant, and Calico's and Cilium's permit sides with
 * their rules' permits. Inline first entries with Maps only for more: at shape (a) most memo
 * entries have one value, and a Map per entry was most of what the memo allocated.
 */
import type { RuleTable } from '../model/rule.ts';
import type { RuleFacts } from '../model/cluster-policy-facts.ts';
import type { FirstAndMore } from '../util/first-and-more.ts';
import type { PermitSide } from './permit-side.ts';
import type { NumberedRule } from './rule-numbering.ts';
import type { TieredTable } from './types.ts';

type Direction = 'ingress' | 'egress';

/** A policy direction's prepared rules by template index (see Configurator.preparedRules). */
export interface PreparedSlots {
  readonly plain: (NumberedRule | undefined)[];
  /** Made for the first named port resolved. */
  named?: (NamedPortRules | undefined)[];
}

/** A named-port template's rule for its first resolved number, and a Map for any others. */
export interface NamedPortRules {
  readonly port: number;
  readonly rule: NumberedRule;
  more?: Map<number, NumberedRule>;
}

/**
 * A selection's permit side (null: its rules need the ordered lists), and its tables: the first
 * NetworkPolicy table and variant's inline, Maps for any others (shape (a) gives each selection
 * one: Maps per entry were most of what it allocated).
 */
export interface PermitEntry {
  readonly side: PermitSide | null;
  table?: RuleTable;
  variant?: string;
  merged?: PermitTables | null;
  more?: Map<RuleTable, Map<string, PermitTables | null>>;
}

/** A permit side's table, with its outside blocks' permits as an Admin list when it has some. */
export type PermitTables = RuleTable | OutsideSplit;
interface OutsideSplit {
  readonly table: RuleTable;
  readonly admin: TieredTable;
}

/**
 * Per direction and policy, its rules' permits by their place in its list: a pure rule's, and a
 * dependent one's by variant. Keyed by the policy's number in the store (`policySerials`), not
 * the rule or the policy object: a table keyed by objects costs about a microsecond for each one
 * it first takes, one keyed by small integers a tenth of that.
 */
export interface PolicyPermits {
  readonly pure: (RulePermits | null | undefined)[];
  /** Its rules' facts (the policy's, read at ingest), by place. */
  readonly facts: readonly RuleFacts[];
  /** Most rules see one variant (a CIDR rule's nodes, a named port's pod ports): kept inline. */
  readonly byVariant: (FirstAndMore<string | number, RulePermits | null> | undefined)[];
}

/**
 * A rule's numbered permits, and its outside blocks' permits as an Admin list (which a table has
 * no form for), kept together: a table keyed by the permits took an entry per rule.
 */
export interface RulePermits {
  readonly rules: readonly NumberedRule[];
  readonly outside: TieredTable | undefined;
}

export function newRulePermitMemo(): Record<Direction, Map<number, PolicyPermits>> {
  return { ingress: new Map(), egress: new Map() };
}

/** A selection key's table for its first variant, and a Map for any others. */
export interface MemoEntry {
  readonly variant: string;
  readonly table: RuleTable;
  more?: Map<string, RuleTable>;
}
