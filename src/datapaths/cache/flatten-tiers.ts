/**
 * Ordered cluster policy for the VPP stacks. Their tables have no tiers and no Pass, and the
 * renderer cache sorts every table canonically (subsets first) before CombineRules and
 * BuildGlobalTable, so a pod side with Admin or Baseline rules is turned into one table of that
 * kind with the same verdicts:
 *
 * 1. the side as one first-match list: the Admin rules in precedence order; a Pass rule replaced
 *    by what follows its tier restricted to its traffic (each following rule intersected with
 *    it: the next tier's, or the continuation's); then the continuation — the NetworkPolicy table
 *    when the pod is isolated, else the Baseline tiers and "permit the rest". A block outside the
 *    cluster (Cilium's) is its CIDR for every address but the pods', which are decided as hosts;
 * 2. groups expanded to their members' addresses (an intersection of a group with a CIDR is not a
 *    net a rule can hold), remembering which groups were read so a membership change re-flattens,
 *    and each named host decided on its own (see `flattenSide`);
 * 3. the CFP's priority-aware insertion (ordered/prefix-insertion.ts) turns the list into entries
 *    that decide the same under any subsets-first order — the VPP ACL's ordered list and the
 *    session layer's longest-prefix match alike.
 */
import { cidrCovers, familyBits, hostCidr, type Cidr } from '../../net/ip.ts';
import { ANY_NET, netText, type NetRef, type Rule, type RuleTable } from '../../model/rule.ts';
import { insertByPriority, intersect } from '../../ordered/index.ts';
import {
  canonicalTable,
  parseGroupReference,
  passTarget,
  type GroupExpansion,
  type PodTables,
  type TieredTable,
} from '../../configurator/index.ts';

type Decided = Rule & { readonly action: 'permit' | 'deny' };

/** A group reference's member addresses (a whole group or one named-port partition). */
type GroupAddresses = GroupExpansion['addresses'];

interface FlattenedTables {
  readonly tables: PodTables;
  /** Groups whose members the flattened tables were expanded from. */
  readonly groups: ReadonlySet<string>;
}

const PERMIT_ALL: Decided = { action: 'permit', protocol: 'ANY', src: ANY_NET, dst: ANY_NET };

/** A pod's tables with each tiered side flattened into one table; untouched without tiers. */
export function flattenTiers(tables: PodTables, addresses: GroupAddresses): FlattenedTables {
  if (!tables.ingressTiers && !tables.egressTiers) return { tables, groups: new Set() };
  const groups = new Set<string>();
  const side = (
    tiers: TieredTable | undefined,
    policy: RuleTable | undefined,
    remote: Remote,
  ): RuleTable | undefined => (tiers ? flattenSide(tiers, policy, remote, addresses, groups) : policy);
  const ingress = side(tables.ingressTiers, tables.ingress, 'src');
  const egress = side(tables.egressTiers, tables.egress, 'dst');
  return { tables: { ...(ingress ? { ingress } : {}), ...(egress ? { egress } : {}) }, groups };
}

/** The end of a side's rules that names the other party (the pod's own end is "any"). */
type Remote = 'src' | 'dst';

/**
 * Addresses are decided one by one where it matters: every host a rule names (a group member or
 * a /32 or /128) gets its own entries from the rules that contain it — all of them, restricted
 * to that host, so the host is decided entirely — and every other address is decided by the
 * entries of the rules with a CIDR or "any". Host entries sort first (most specific), so the
 * union keeps each address's verdicts, and the work is the sum over hosts of their own rules
 * rather than one insertion over every host at once.
 */
function flattenSide(
  tiers: TieredTable,
  policy: RuleTable | undefined,
  remote: Remote,
  addresses: GroupAddresses,
  groups: Set<string>,
): RuleTable {
  // The continuation: the NetworkPolicy table, else the Baseline tiers and "permit the rest".
  const continuation: readonly Rule[] = policy
    ? policy.rules.filter(decided)
    : [...tiers.baseline, PERMIT_ALL];
  const admin = tiers.admin;
  // Blocks outside the cluster are their CIDR for every address but the pods' (decided as hosts).
  const outside = new Set<number>();
  const podHosts = new Map<string, Cidr>();
  const podGroups = new Set<string>();
  const all: readonly Rule[] = [...admin, ...continuation].map((rule, index) => {
    const net = rule[remote];
    if (net.kind !== 'outside') return rule;
    outside.add(index);
    if (!podGroups.has(net.pods)) {
      podGroups.add(net.pods);
      groups.add(parseGroupReference(net.pods).key);
      for (const ip of addresses(net.pods)) podHosts.set(hostCidr(ip).text, hostCidr(ip));
    }
    return { ...rule, [remote]: { kind: 'cidr', cidr: net.cidr } };
  });
  // Where a pass at a position goes on: the next tier's start (the continuation's, out of Admin).
  const onward = (index: number): number =>
    index < admin.length
      ? passTarget(tiers.adminBreaks, index, admin.length)
      : admin.length + passTarget(tiers.baselineBreaks, index - admin.length, tiers.baseline.length);
  // Which rules (by position) contain each named host; the rest are CIDR or "any" rules.
  const hosts = new Map<string, { cidr: Cidr; rules: number[] }>();
  const generic: number[] = [];
  const addHost = (cidr: Cidr, index?: number): void => {
    const key = cidr.text;
    const entry = hosts.get(key);
    if (!entry) hosts.set(key, { cidr, rules: index === undefined ? [] : [index] });
    else if (index !== undefined) entry.rules.push(index);
  };
  all.forEach((rule, index) => {
    const net = rule[remote];
    if (net.kind === 'group') {
      groups.add(parseGroupReference(net.group).key);
      for (const ip of addresses(net.group)) addHost(hostCidr(ip), index);
    } else if (net.kind === 'cidr' && net.cidr.prefix === familyBits(net.cidr.family) && !outside.has(index))
      addHost(net.cidr, index);
    else generic.push(index);
  });
  // Pods are decided one by one where a rule leaves them out.
  for (const cidr of podHosts.values()) addHost(cidr);
  const entries: Rule[] = [];
  const decide = (indices: readonly number[], restrict: (rule: Rule) => Rule): Decided[] => {
    const own = indices.map((i) => ({ index: i, rule: restrict(all[i] as Rule) }));
    // First match from a position, within what a pass matched: a pass is what follows its tier.
    const walk = (from: number, within: Rule | undefined): Decided[] => {
      const ordered: Decided[] = [];
      for (const { index, rule } of own) {
        if (index < from) continue;
        const restricted = within ? intersect(rule, within) : rule;
        if (!restricted) continue;
        if (decided(restricted)) ordered.push(restricted);
        else for (const next of walk(onward(index), restricted)) ordered.push(next);
      }
      return ordered;
    };
    return insertByPriority(walk(0, undefined));
  };
  for (const entry of decide(generic, (rule) => rule)) entries.push(entry);
  // Hosts that the same rules contain are decided alike: the entries of the first, re-addressed.
  const decisions = new Map<string, Decided[]>();
  // Generic rules by their net: containment is asked once per distinct net and host.
  const genericNets = new Map<string, { net: NetRef; indices: number[] }>();
  for (const i of generic) {
    const net = (all[i] as Rule)[remote];
    const key = netText(net);
    const entry = genericNets.get(key);
    if (entry) entry.indices.push(i);
    else genericNets.set(key, { net, indices: [i] });
  }
  for (const { cidr, rules } of hosts.values()) {
    const host: NetRef = { kind: 'cidr', cidr };
    const containing: number[] = [];
    const pod = podHosts.has(cidr.text);
    for (const { net, indices } of genericNets.values())
      if (contains(net, cidr)) for (const i of indices) if (!pod || !outside.has(i)) containing.push(i);
    const indices = mergeSorted(rules, containing);
    const signature = indices.join(',');
    const decision = decisions.get(signature);
    if (decision) for (const entry of decision) entries.push({ ...entry, [remote]: host });
    else {
      const fresh = decide(indices, (rule) => ({ ...rule, [remote]: host }));
      decisions.set(signature, fresh);
      for (const entry of fresh) entries.push(entry);
    }
  }
  return canonicalTable(entries.map(({ precedence: _precedence, ...rule }) => rule));
}

function contains(net: NetRef, host: Cidr): boolean {
  return net.kind === 'any' || (net.kind === 'cidr' && cidrCovers(net.cidr, host));
}

/** Two ascending lists of rule positions as one, without repeats. */
function mergeSorted(a: readonly number[], b: readonly number[]): number[] {
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

function decided(rule: Rule): rule is Decided {
  return rule.action !== 'pass';
}
