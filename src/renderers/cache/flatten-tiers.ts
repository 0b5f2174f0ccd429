/**
 * Ordered cluster policy for the VPP stacks. Their tables have no tiers and no Pass, and the
 * renderer cache sorts every table canonically (subsets first) before CombineRules and
 * BuildGlobalTable, so a pod side with Admin or Baseline rules is turned into one table of that
 * kind with the same verdicts:
 *
 * 1. the side as one first-match list: the Admin rules in precedence order; a Pass rule replaced
 *    by what follows it restricted to its traffic (each continuation rule intersected with it);
 *    then the continuation — the NetworkPolicy table when the pod is isolated, else the
 *    Baseline rules (where Pass, skipping the rest of the tier, permits) and "permit the rest";
 * 2. groups expanded to their members' addresses (an intersection of a group with a CIDR is not a
 *    net a rule can hold), remembering which groups were read so a membership change re-flattens;
 * 3. the CFP's priority-aware insertion (ordered/prefix-insertion.ts) turns the list into entries
 *    that decide the same under any subsets-first order — the VPP ACL's ordered list and the
 *    session layer's longest-prefix match alike.
 */
import { hostCidr, type IpAddress } from '../../net/ip.ts';
import { ANY_NET, type NetRef, type Rule, type RuleTable } from '../../model/rule.ts';
import { insertByPriority, intersect } from '../../ordered/prefix-insertion.ts';
import {
  canonicalTable,
  parseGroupReference,
  type PodTables,
  type TieredTable,
} from '../../configurator/index.ts';

type Decided = Rule & { readonly action: 'permit' | 'deny' };

/** A group reference's member addresses (a whole group or one named-port partition). */
export type GroupAddresses = (reference: string) => readonly IpAddress[];

export interface FlattenedTables {
  readonly tables: PodTables;
  /** Groups whose members the flattened tables were expanded from. */
  readonly groups: ReadonlySet<string>;
}

const PERMIT_ALL: Decided = { action: 'permit', protocol: 'ANY', src: ANY_NET, dst: ANY_NET };

/** A pod's tables with each tiered side flattened into one table; untouched without tiers. */
export function flattenTiers(tables: PodTables, addresses: GroupAddresses): FlattenedTables {
  if (!tables.ingressTiers && !tables.egressTiers) return { tables, groups: new Set() };
  const groups = new Set<string>();
  const side = (tiers: TieredTable | undefined, policy: RuleTable | undefined): RuleTable | undefined =>
    tiers ? flattenSide(tiers, policy, addresses, groups) : policy;
  const ingress = side(tables.ingressTiers, tables.ingress);
  const egress = side(tables.egressTiers, tables.egress);
  return { tables: { ...(ingress ? { ingress } : {}), ...(egress ? { egress } : {}) }, groups };
}

function flattenSide(
  tiers: TieredTable,
  policy: RuleTable | undefined,
  addresses: GroupAddresses,
  groups: Set<string>,
): RuleTable {
  const expand = (rules: readonly Rule[]): Rule[] =>
    rules.flatMap((rule) => expandRule(rule, addresses, groups));
  // Pass in the Baseline tier skips the rest of it: to the default, permit.
  const baseline = (): Decided[] =>
    expand(tiers.baseline).map((rule) => (decided(rule) ? rule : { ...rule, action: 'permit' }));
  const continuation = policy ? expand(policy.rules).filter(decided) : [...baseline(), PERMIT_ALL];
  const ordered: Decided[] = [];
  for (const rule of expand(tiers.admin)) {
    if (decided(rule)) ordered.push(rule);
    else
      for (const next of continuation) {
        const restricted = intersect(next, rule);
        if (restricted) ordered.push(restricted);
      }
  }
  ordered.push(...continuation);
  return canonicalTable(insertByPriority(ordered).map(({ precedence: _precedence, ...rule }) => rule));
}

function decided(rule: Rule): rule is Decided {
  return rule.action !== 'pass';
}

/** One rule per combination of its nets' addresses (groups to host CIDRs); none for an empty group. */
function expandRule(rule: Rule, addresses: GroupAddresses, groups: Set<string>): Rule[] {
  const nets = (net: NetRef): NetRef[] => {
    if (net.kind !== 'group') return [net];
    groups.add(parseGroupReference(net.group).key);
    return addresses(net.group).map((ip) => ({ kind: 'cidr', cidr: hostCidr(ip) }));
  };
  const out: Rule[] = [];
  for (const src of nets(rule.src))
    for (const dst of nets(rule.dst)) {
      if (src.kind === 'cidr' && dst.kind === 'cidr' && src.cidr.family !== dst.cidr.family) continue;
      out.push({ ...rule, src, dst });
    }
  return out;
}
