/**
 * One compiled rule table as an nftables chain, in "check" form: a permitted packet returns to
 * the caller, anything else is dropped. Group references match named sets; rules with the same
 * action and address match are merged into one rule whose protocols and ports are an anonymous
 * set (`meta l4proto . th dport { tcp . 80, udp . 53 }`), so per-packet work depends on how many
 * distinct peers a table has, not on how many rules or ports.
 *
 * Each table also has a reply-direction twin, for re-checking a tracked flow whose next packet
 * travels back (see the renderer): the same rules with source and destination swapped and the
 * port read from the source port, so the flow is judged by its original direction either way.
 */
import type { Cidr, IpFamily } from '../../net/ip.ts';
import type { NetRef, Rule, RuleTable } from '../../model/rule.ts';
import { addressProtocol, FAMILIES, groupSet, netSet, netSetElement, netSetMatch } from './names.ts';
import { intervalElements } from './intervals.ts';

interface RenderedChain {
  readonly lines: readonly string[];
  /** The same table for packets of the reply direction (judged as their original direction). */
  readonly replyLines: readonly string[];
  /** Group references (`key` or `key#port`) the chain's rules use. */
  readonly groups: readonly string[];
  /** Named interval sets of addresses the rules (of both twins) match, with their elements. */
  readonly sets: readonly NetSet[];
}

/** A named interval set of addresses (see `netSet`). */
export interface NetSet {
  readonly name: string;
  readonly family: IpFamily;
  readonly elements: readonly string[];
}

/** The address matches of one net, per family it can match ('' = any address). */
function addressMatches(
  net: NetRef,
  field: 'saddr' | 'daddr',
  families: readonly IpFamily[],
): Map<IpFamily | 'any', string> {
  switch (net.kind) {
    case 'any':
      return new Map([['any', '']]);
    case 'cidr':
      // A block of a family the node does not carry can match no packet it polices.
      return families.includes(net.cidr.family)
        ? new Map([[net.cidr.family, `${addressProtocol(net.cidr.family)} ${field} ${net.cidr.text}`]])
        : new Map<IpFamily | 'any', string>();
    case 'group':
      return new Map(families.map((f) => [f, `${addressProtocol(f)} ${field} @${groupSet(net.group, f)}`]));
    case 'outside': {
      // The block's addresses that are no pod's: in it, and not in the set of every pod.
      const family = net.cidr.family;
      const match = `${addressProtocol(family)} ${field}`;
      return families.includes(family)
        ? new Map([[family, `${match} ${net.cidr.text} ${match} != @${groupSet(net.pods, family)}`]])
        : new Map<IpFamily | 'any', string>();
    }
  }
}

/** Combines source and destination matches of a rule into per-family address matches. */
function ruleAddressMatches(rule: Rule, reply: boolean, families: readonly IpFamily[]): string[] {
  const src = addressMatches(rule.src, reply ? 'daddr' : 'saddr', families);
  const dst = addressMatches(rule.dst, reply ? 'saddr' : 'daddr', families);
  const lines: string[] = [];
  for (const [sf, s] of src) {
    for (const [df, d] of dst) {
      if (sf !== 'any' && df !== 'any' && sf !== df) continue; // no packet is of two families
      lines.push([s, d].filter(Boolean).join(' '));
    }
  }
  return lines;
}

const protocolName = (protocol: Rule['protocol']): string => protocol.toLowerCase();

function portText(ports: readonly [number, number]): string {
  return ports[0] === ports[1] ? `${ports[0]}` : `${ports[0]}-${ports[1]}`;
}

/** The protocol/port matches of rules merged into one address match ('' = any traffic). */
function l4Matches(rules: readonly Rule[], reply: boolean): string[] {
  const port = reply ? 'th sport' : 'th dport';
  if (rules.some((r) => r.protocol === 'ANY' && !r.dstPorts)) return [''];
  const protocolsOnly = [...new Set(rules.filter((r) => !r.dstPorts).map((r) => protocolName(r.protocol)))];
  const withPorts = rules.filter((r) => r.dstPorts && r.protocol !== 'ANY');
  const anyProtocolPorts = rules.filter((r) => r.dstPorts && r.protocol === 'ANY');
  const lines: string[] = [];
  // One value is a plain comparison, not a one-element anonymous set: every anonymous set is a
  // kernel object that each later transaction's cache load lists and walks.
  if (protocolsOnly.length === 1) lines.push(`meta l4proto ${protocolsOnly[0]}`);
  else if (protocolsOnly.length > 1) lines.push(`meta l4proto { ${protocolsOnly.join(', ')} }`);
  const covered = new Set(protocolsOnly);
  const pairs = new Map<string, [string, string]>();
  for (const r of withPorts) {
    if (covered.has(protocolName(r.protocol))) continue;
    const text = portText(r.dstPorts as [number, number]);
    pairs.set(`${protocolName(r.protocol)} . ${text}`, [protocolName(r.protocol), text]);
  }
  const [only] = pairs.values();
  if (pairs.size === 1 && only) lines.push(`meta l4proto ${only[0]} ${port} ${only[1]}`);
  else if (pairs.size > 1) lines.push(`meta l4proto . ${port} { ${[...pairs.keys()].join(', ')} }`);
  const anyPorts = [...new Set(anyProtocolPorts.map((r) => portText(r.dstPorts as [number, number])))];
  if (anyPorts.length === 1) lines.push(`${port} ${anyPorts[0]}`);
  else if (anyPorts.length > 1) lines.push(`${port} { ${anyPorts.join(', ')} }`);
  return lines;
}

const netKey = (rule: Rule): string =>
  `${JSON.stringify(rule.src, bigintText)}|${JSON.stringify(rule.dst, bigintText)}`;
function bigintText(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/**
 * Groups a first-match table into runs that can each become one nft rule per address match.
 * When the only deny is the final deny-everything (what the configurator produces), permits
 * commute, so every permit with the same address match joins one run; otherwise only adjacent
 * rules with equal action and addresses merge, which keeps first-match order exact.
 */
function runsOf(rules: readonly Rule[]): { runs: Run[]; commutative: boolean } {
  const last = rules[rules.length - 1];
  const denyRest =
    last !== undefined &&
    last.action === 'deny' &&
    last.protocol === 'ANY' &&
    !last.dstPorts &&
    last.src.kind === 'any' &&
    last.dst.kind === 'any';
  const body = denyRest ? rules.slice(0, -1) : rules;
  if (denyRest && body.every((r) => r.action === 'permit')) {
    const byNet = new Map<string, Rule[]>();
    for (const rule of body) {
      const key = netKey(rule);
      const run = byNet.get(key);
      if (run) run.push(rule);
      else byNet.set(key, [rule]);
    }
    return { runs: [...byNet.values()].map((run) => ({ action: 'permit', rules: run })), commutative: true };
  }
  return { runs: adjacentRuns(rules), commutative: false };
}

/** Group references the runs' rules use (one run shares its addresses). */
function groupsOf(runs: readonly Run[]): Set<string> {
  const groups = new Set<string>();
  for (const run of runs)
    for (const net of [run.rules[0]?.src, run.rules[0]?.dst])
      if (net?.kind === 'group') groups.add(net.group);
      else if (net?.kind === 'outside') groups.add(net.pods);
  return groups;
}

/** Adjacent rules with the same action and addresses as one run; order kept (first match stays exact). */
function adjacentRuns(rules: readonly Rule[]): Run[] {
  const runs: Run[] = [];
  for (const rule of rules) {
    const previous = runs[runs.length - 1];
    if (previous && previous.action === rule.action && netKey(previous.rules[0] as Rule) === netKey(rule))
      previous.rules.push(rule);
    else runs.push({ action: rule.action, rules: [rule] });
  }
  return runs;
}

interface Run {
  readonly action: Rule['action'];
  readonly rules: Rule[];
}

/** A rule table as a chain and its reply twin, for the address families the node carries. */
export function renderTableChain(
  table: RuleTable,
  families: readonly IpFamily[] = FAMILIES,
  deny = 'drop',
): RenderedChain {
  const { runs, commutative } = runsOf(table.rules);
  const groups = groupsOf(runs);
  const sets = new Map<string, NetSet>();
  return {
    lines: chainLines(runs, commutative, false, families, sets, tableVerdicts(deny)),
    // Reply packets are never new: their drops are plain.
    replyLines: chainLines(runs, commutative, true, families, sets),
    groups: [...groups],
    sets: [...sets.values()],
  };
}

/**
 * Rule lines for runs in order. When the runs commute (permits only), runs that match one side
 * by CIDR and allow the same traffic share one rule that looks the address up in one set: the
 * CIDRs merged into the fewest ranges (an `except` splits a block into many prefixes, and the
 * blocks of many policies overlap), as a named interval set shared by every chain — and reply
 * twin — with the same ranges (`sets` collects them), or inline when one range remains.
 */
function chainLines(
  runs: readonly Run[],
  commutative: boolean,
  reply: boolean,
  families: readonly IpFamily[],
  sets: Map<string, NetSet> = new Map(),
  verdicts: Readonly<Record<Rule['action'], string>> = TABLE_VERDICTS,
  tail?: readonly string[],
): string[] {
  const lines: string[] = [];
  const cidrGroups = new Map<string, { match: string; l4: string; family: IpFamily; cidrs: Cidr[] }>();
  for (const run of runs) {
    const first = run.rules[0] as Rule;
    const verdict = verdicts[run.action];
    const l4s = l4Matches(run.rules, reply);
    const cidrSide =
      first.src.kind === 'cidr' && first.dst.kind === 'any'
        ? { cidr: first.src.cidr, field: reply ? 'daddr' : 'saddr' }
        : first.dst.kind === 'cidr' && first.src.kind === 'any'
          ? { cidr: first.dst.cidr, field: reply ? 'saddr' : 'daddr' }
          : undefined;
    if (cidrSide && !families.includes(cidrSide.cidr.family)) continue;
    if (commutative && cidrSide) {
      // Grouped by each rule's own protocol and port, not by the union over rules that share a
      // prefix: prefixes of different blocks then merge instead of splitting by port combination.
      const match = `${addressProtocol(cidrSide.cidr.family)} ${cidrSide.field}`;
      for (const rule of run.rules)
        for (const l4 of l4Matches([rule], reply)) {
          const key = `${match}|${l4}`;
          const group = cidrGroups.get(key);
          if (group) group.cidrs.push(cidrSide.cidr);
          else cidrGroups.set(key, { match, l4, family: cidrSide.cidr.family, cidrs: [cidrSide.cidr] });
        }
      continue;
    }
    for (const address of ruleAddressMatches(first, reply, families))
      for (const l4 of l4s) lines.push([address, l4, verdict].filter(Boolean).join(' '));
  }
  for (const { match, l4, family, cidrs } of cidrGroups.values()) {
    const elements = intervalElements(family, cidrs);
    let addresses = `${match} ${elements[0] ?? ''}`;
    if (elements.length > 1) {
      const name = netSet(family, elements);
      sets.set(name, { name, family, elements: elements.map((e) => netSetElement(family, e)) });
      addresses = netSetMatch(match, name);
    }
    lines.push([addresses, l4, 'return'].filter(Boolean).join(' '));
  }
  if (tail) return [...lines, ...tail];
  // Whatever no rule permitted is denied, also for a table that does not say so itself.
  if (lines[lines.length - 1] !== verdicts.deny) lines.push(verdicts.deny);
  return lines;
}

/** A NetworkPolicy table's verdicts, its drops as `deny` says (the flow log's chain, or plain). */
const tableVerdicts = (deny: string): Readonly<Record<Rule['action'], string>> => ({
  permit: 'return',
  deny,
  pass: deny,
});
const TABLE_VERDICTS = tableVerdicts('drop');

/**
 * An ordered cluster-policy rule list (first match, mixed actions) as chain lines: permit returns
 * to the caller, deny drops, pass takes `verdicts.pass`; after the rules, `tail` (where no rule
 * matched). Adjacent rules with the same action and addresses share one rule; nothing is
 * reordered. The reply twin reads addresses and ports the other way round, as table twins do.
 */
export function renderOrderedChain(
  rules: readonly Rule[],
  verdicts: { readonly pass: string; readonly replyPass: string },
  tail: readonly string[],
  replyTail: readonly string[],
  families: readonly IpFamily[] = FAMILIES,
  deny = 'drop',
): RenderedChain {
  const runs = adjacentRuns(rules);
  const groups = groupsOf(runs);
  return {
    lines: chainLines(
      runs,
      false,
      false,
      families,
      undefined,
      { permit: 'return', deny, pass: verdicts.pass },
      tail,
    ),
    replyLines: chainLines(
      runs,
      false,
      true,
      families,
      undefined,
      { permit: 'return', deny: 'drop', pass: verdicts.replyPass },
      replyTail,
    ),
    groups: [...groups],
    sets: [],
  };
}
