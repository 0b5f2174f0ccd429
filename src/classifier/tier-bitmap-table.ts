/**
 * One pod's table for one cluster-policy tier and direction, built from the configurator's
 * tiered rule list (the same compilation every datapath gets): Mizar's maps with one rule slot
 * per 6-tuple, numbered in the list's precedence order, so the lowest set bit of
 * `peers & ports` is the rule that decides and its action (allow, deny, pass) is the answer —
 * priorities come from bit order, no ordered scan. Group references (address groups, named-port
 * partitions) go through the classifier's group layer; CIDRs into the table's tries.
 */
import { makeCidr, type Cidr } from '../net/ip.ts';
import { PROTOCOLS, type Protocol } from '../model/types.ts';
import { ruleText, type Rule } from '../model/rule.ts';
import { PARTITION_SEPARATOR, UnsupportedPolicyError } from '../configurator/types.ts';
import { DirectionTable } from './direction-table.ts';
import type { StateGroupResolver } from './state-group-resolver.ts';
import { tierForm, type TierForm } from './tier-decision-input.ts';

export const ACTION_ALLOW = 0;
export const ACTION_DENY = 1;
export const ACTION_PASS = 2;

export interface TierTable {
  readonly table: DirectionTable;
  /** Per slot: ACTION_ALLOW, ACTION_DENY or ACTION_PASS. */
  readonly actions: Uint8Array;
  /** The same rules as lookups decide them (tier-decisions.ts); `table` is walked for the rest. */
  readonly form: TierForm;
}

const ANYWHERE: Cidr[] = [makeCidr(4, 0n, 0), makeCidr(6, 0n, 0)];
const ACTION_OF: Record<Rule['action'], number> = {
  permit: ACTION_ALLOW,
  deny: ACTION_DENY,
  pass: ACTION_PASS,
};

/** The table of a tier's rules (precedence order), or undefined when the tier has none. */
export function tierTable(
  rules: readonly Rule[],
  direction: 'ingress' | 'egress',
  resolver: StateGroupResolver,
): TierTable | undefined {
  if (rules.length === 0) return undefined;
  const table = new DirectionTable(rules.length);
  table.useGroups(resolver);
  const actions = new Uint8Array(rules.length);
  rules.forEach((rule, bit) => {
    actions[bit] = ACTION_OF[rule.action];
    table.labels.push(ruleText(rule));
    const remote = direction === 'ingress' ? rule.src : rule.dst;
    if (remote.kind === 'any') for (const cidr of ANYWHERE) table.addCidr('prim', cidr, cidr.text, bit);
    else if (remote.kind === 'cidr') table.addCidr('prim', remote.cidr, remote.cidr.text, bit);
    else if (remote.kind === 'outside')
      throw new UnsupportedPolicyError('the classifier has no form for addresses outside the cluster only');
    else {
      table.addGroup(resolver.idOf(remote.group), bit);
      // Named-port partitions change the table's slots when their numbers change: remember the group.
      const separator = remote.group.indexOf(PARTITION_SEPARATOR);
      if (separator >= 0) table.groups.add(remote.group.slice(0, separator));
    }
    addPorts(table, rule, bit);
  });
  return { table, actions, form: tierForm(rules, actions, direction, resolver) };
}

function addPorts(table: DirectionTable, rule: Rule, bit: number): void {
  if (rule.protocol === 'ANY' && !rule.dstPorts) return table.addL3(bit);
  const protocols: readonly Protocol[] = rule.protocol === 'ANY' ? PROTOCOLS : [rule.protocol];
  for (const protocol of protocols) {
    if (!rule.dstPorts) table.addProtocol(protocol, bit);
    else if (rule.dstPorts[1] > rule.dstPorts[0])
      table.addRange(protocol, rule.dstPorts[0], rule.dstPorts[1], bit);
    else table.addPort(protocol, rule.dstPorts[0], bit);
  }
}
