/**
 * Interprets rule tables for one packet: first match in list order (as an ACL does), or longest
 * prefix match (as VPP session rules do: the most specific matching rule wins). Group references
 * are resolved through a lookup, so the same evaluator serves configurator tables and the
 * renderer cache's combined and global tables.
 */
import { cidrContains, type IpAddress } from '../net/ip.ts';
import { compareRules, type NetRef, type Rule, type RuleAction } from '../model/rule.ts';
import type { Protocol } from '../model/types.ts';
import { passTarget } from './types.ts';

export interface Packet {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

/** Answers "is this address in that group (or group partition)?". */
export interface GroupLookup {
  has(group: string, ip: IpAddress): boolean;
}

/** A lookup that can also list a reference's addresses, for renderers that must expand groups. */
export interface GroupExpansion extends GroupLookup {
  addresses(group: string): readonly IpAddress[];
}

export function netMatches(net: NetRef, ip: IpAddress, groups: GroupLookup): boolean {
  switch (net.kind) {
    case 'any':
      return true;
    case 'cidr':
      return cidrContains(net.cidr, ip);
    case 'group':
      return groups.has(net.group, ip);
    case 'outside':
      return cidrContains(net.cidr, ip) && !groups.has(net.pods, ip);
  }
}

function ruleMatches(rule: Rule, packet: Packet, groups: GroupLookup): boolean {
  if (rule.protocol !== 'ANY' && rule.protocol !== packet.protocol) return false;
  if (rule.dstPorts && (packet.port < rule.dstPorts[0] || packet.port > rule.dstPorts[1])) return false;
  return netMatches(rule.src, packet.src, groups) && netMatches(rule.dst, packet.dst, groups);
}

/** The action of the first rule that matches, in list order. */
export function firstMatch(
  rules: readonly Rule[],
  packet: Packet,
  groups: GroupLookup,
): RuleAction | undefined {
  for (const rule of rules) if (ruleMatches(rule, packet, groups)) return rule.action;
  return undefined;
}

/**
 * An ordered list of tiers: the first matching rule decides (permit or deny); a pass skips to
 * the next tier's start (`breaks`, see TieredTable) or leaves the list. Undefined: nothing
 * decided — the walk goes on past the list.
 */
export function tieredMatch(
  rules: readonly Rule[],
  breaks: readonly number[] | undefined,
  packet: Packet,
  groups: GroupLookup,
): 'permit' | 'deny' | undefined {
  for (let i = 0; i < rules.length;) {
    const rule = rules[i] as Rule;
    if (!ruleMatches(rule, packet, groups)) i++;
    else if (rule.action !== 'pass') return rule.action;
    else i = passTarget(breaks, i, rules.length);
  }
  return undefined;
}

/**
 * The action of the most specific matching rule: ordering by the seed's total order puts more
 * specific rules first, so this is first match over the rules in that order.
 */
export function longestPrefixMatch(
  rules: readonly Rule[],
  packet: Packet,
  groups: GroupLookup,
): RuleAction | undefined {
  return firstMatch([...rules].sort(compareRules), packet, groups);
}
