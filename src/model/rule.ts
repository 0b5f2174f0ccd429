/**
 * The compiled form of policy: 6-tuple rules (src net, src port, dst net, dst port range,
 * protocol, action) in tables, after Contiv/VPP's policy plugin. Source ports are always "any"
 * for Kubernetes policy, so they are not stored. A net is any address, one CIDR, or a reference
 * to an address group (a shared, named set of pod addresses) so that nothing expands per peer
 * IP unless a renderer needs it.
 */
import { familyBits, type Cidr } from '../net/ip.ts';
import type { Protocol } from './types.ts';

export type NetRef =
  | { readonly kind: 'any' }
  | { readonly kind: 'cidr'; readonly cidr: Cidr }
  | { readonly kind: 'group'; readonly group: string }
  /**
   * The addresses of `cidr` no pod has — `pods` is the group of every pod (node addresses are
   * left out of `cidr` when the rule is compiled): Cilium's `world` and CIDR rules.
   */
  | { readonly kind: 'outside'; readonly cidr: Cidr; readonly pods: string };

/** `pass` (ordered cluster policy only): leave this tier, go on to NetworkPolicy or the default. */
export type RuleAction = 'permit' | 'deny' | 'pass';

export interface Rule {
  readonly action: RuleAction;
  readonly protocol: Protocol | 'ANY';
  readonly src: NetRef;
  readonly dst: NetRef;
  /** Inclusive destination port range; undefined means every port. */
  readonly dstPorts?: readonly [number, number];
  /**
   * Ordered cluster policy only: the rule's dense precedence key (tier, priority, tie-break, rule
   * order; model/precedence.ts). Tiered lists are in this order; NetworkPolicy rules have none.
   */
  readonly precedence?: number;
}

/**
 * A rule table: rules in their canonical order, identified by a hash of their text (computed
 * when first asked for: a full compile makes 100,000 tables whose ids only renderers and output
 * read).
 */
export interface RuleTable {
  readonly id: string;
  readonly rules: readonly Rule[];
}

export const ANY_NET: NetRef = { kind: 'any' };

export function netText(net: NetRef): string {
  switch (net.kind) {
    case 'any':
      return 'any';
    case 'cidr':
      return net.cidr.text;
    case 'group':
      return `group:${net.group}`;
    case 'outside':
      return `outside:${net.cidr.text}`;
  }
}

export function ruleText(rule: Rule): string {
  const ports = rule.dstPorts
    ? rule.dstPorts[0] === rule.dstPorts[1]
      ? `${rule.dstPorts[0]}`
      : `${rule.dstPorts[0]}-${rule.dstPorts[1]}`
    : 'any';
  const order = rule.precedence !== undefined ? ` @${rule.precedence}` : '';
  return `${rule.action} ${rule.protocol} ${netText(rule.src)} -> ${netText(rule.dst)} port ${ports}${order}`;
}

/**
 * How many addresses a net stands for, as a rank for ordering: a CIDR by its host bits, a group
 * as a set of host addresses (each member is a /32 or /128), "any" as everything.
 */
function netRank(net: NetRef): [number, number, string] {
  switch (net.kind) {
    case 'cidr':
      return [familyBits(net.cidr.family) - net.cidr.prefix, 0, cidrSortText(net.cidr)];
    case 'group':
      return [0, 1, net.group];
    case 'outside':
      return [familyBits(net.cidr.family) - net.cidr.prefix, 2, cidrSortText(net.cidr)];
    case 'any':
      return [129, 0, ''];
  }
}

/** CIDRs are shared objects: their sort text (a bigint in hex, which is slow to format) is made once. */
const cidrSortTexts = new WeakMap<Cidr, string>();

function cidrSortText(cidr: Cidr): string {
  let text = cidrSortTexts.get(cidr);
  if (text === undefined) {
    text = `${cidr.family}:${cidr.base.toString(16).padStart(32, '0')}/${cidr.prefix}`;
    cidrSortTexts.set(cidr, text);
  }
  return text;
}

function compareNet(a: NetRef, b: NetRef): number {
  const [ra, ka, ta] = netRank(a);
  const [rb, kb, tb] = netRank(b);
  return ra - rb || ka - kb || (ta < tb ? -1 : ta > tb ? 1 : 0);
}

function portSpan(rule: Rule): number {
  return rule.dstPorts ? rule.dstPorts[1] - rule.dstPorts[0] : 65536;
}

/** Protocols in the order rules sort by (TCP, UDP, SCTP, then any). */
export const PROTOCOL_RANK: Record<Rule['protocol'], number> = { TCP: 0, UDP: 1, SCTP: 2, ANY: 3 };

/**
 * The seed's total order (`ContivRule.Compare`): when `a` matches a subset of `b`'s traffic,
 * `a` sorts first. Each component is ordered by the size of what it matches (a linear
 * extension of set inclusion) and components are compared lexicographically, which keeps the
 * subset property for the product. Groups rank as host addresses; for first-match tables the
 * relative order of two permit rules never changes a verdict.
 */
export function compareRules(a: Rule, b: Rule): number {
  return (
    compareNet(a.src, b.src) ||
    compareNet(a.dst, b.dst) ||
    PROTOCOL_RANK[a.protocol] - PROTOCOL_RANK[b.protocol] ||
    portSpan(a) - portSpan(b) ||
    (a.dstPorts?.[0] ?? 0) - (b.dstPorts?.[0] ?? 0) ||
    // Equal matches: permit first, so a table's one deny-the-rest rule always stays last.
    (a.action === b.action ? 0 : a.action === 'permit' ? -1 : 1)
  );
}

/**
 * A rule with a sort key whose string order is `compareRules` order. The key encodes every
 * field but the precedence (nets, protocol, port range, action), so equal keys and precedence
 * mean equal rules.
 */
export interface PreparedRule {
  readonly rule: Rule;
  readonly key: string;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

function netKey(net: NetRef): string {
  const [rank, kind, text] = netRank(net);
  // Text is terminated by \u0000 so that a prefix sorts before its extensions, as in compareNet.
  return `${pad(rank, 3)}${kind}${text}\u0000`;
}

export function prepareRule(rule: Rule): PreparedRule {
  return { rule, key: ruleKey(rule) };
}

/** The sort key of a rule (see PreparedRule). */
export function ruleKey(rule: Rule): string {
  return (
    netKey(rule.src) +
    netKey(rule.dst) +
    PROTOCOL_RANK[rule.protocol] +
    pad(portSpan(rule), 5) +
    pad(rule.dstPorts?.[0] ?? 0, 5) +
    (rule.action === 'permit' ? '0' : '1')
  );
}
