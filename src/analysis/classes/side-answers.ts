/**
 * One side of one class from its compiled tables — the egress of a source or the ingress of a
 * destination, over one address family — as pieces of the port space, each with the set of peer
 * classes it lets through: the Admin tier's rules in order, then the NetworkPolicy table when the
 * class is isolated (its own node always allowed), else the Baseline tier's rules, else allowed —
 * as the datapaths decide. A table's pieces are cut only at its own rules' port bounds, so a side
 * costs its rules, not the cluster's ports; sides with equal tables are computed once.
 */
import type { IpFamily } from '../../net/ip.ts';
import { PROTOCOLS, type Protocol } from '../../model/types.ts';
import { portSetHas, type PortSet } from '../../model/port-set.ts';
import type { NetRef, Rule, RuleTable } from '../../model/rule.ts';
import type { TieredTable } from '../../configurator/index.ts';
import type { ClassNets } from './class-nets.ts';
import {
  EMPTY_SET,
  intersectSets,
  NO_PEERS,
  samePeers,
  setsEqual,
  subtractSets,
  unionSets,
  type IntervalSet,
  type PeerSet,
} from './interval-set.ts';

interface SidePiece {
  readonly protocol: Protocol;
  readonly from: number;
  readonly to: number;
  readonly set: PeerSet;
}

/** A side: every protocol's ports covered by pieces in order; `open` when each piece is every class of the family (the one part `all`). */
export interface SideAnswer {
  readonly open: boolean;
  readonly pieces: readonly SidePiece[];
}

type Direction = 'ingress' | 'egress';

/** Every port of every protocol to every class of the family: a side no policy restricts. */
export function openAnswer(all: IntervalSet): SideAnswer {
  const everyone: PeerSet = [all];
  return {
    open: true,
    pieces: PROTOCOLS.map((protocol) => ({ protocol, from: 1, to: 65535, set: everyone })),
  };
}

/** The peers a side lets through on one port. */
export function answerAt(answer: SideAnswer, protocol: Protocol, port: number): PeerSet {
  const pieces = answer.pieces;
  let low = 0;
  let high = pieces.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const piece = pieces[mid] as SidePiece;
    const before =
      PROTOCOL_ORDER[piece.protocol] < PROTOCOL_ORDER[protocol] ||
      (piece.protocol === protocol && piece.to < port);
    if (before) low = mid + 1;
    else high = mid;
  }
  const piece = pieces[low];
  return piece && piece.protocol === protocol && piece.from <= port ? piece.set : NO_PEERS;
}

const PROTOCOL_ORDER: Record<Protocol, number> = { TCP: 0, UDP: 1, SCTP: 2 };

/** The port bounds where the rules' decisions may change, per protocol (each list starts at 1). */
function ruleCuts(rules: Iterable<Rule>, cuts: Record<Protocol, Set<number>>): void {
  for (const rule of rules) {
    const from = rule.dstPorts?.[0] ?? 1;
    const to = rule.dstPorts?.[1] ?? 65535;
    for (const protocol of PROTOCOLS)
      if (rule.protocol === 'ANY' || rule.protocol === protocol) {
        cuts[protocol].add(from);
        if (to < 65535) cuts[protocol].add(to + 1);
      }
  }
}

/** The bounds of a port set's ranges, as cuts. */
function onlyCuts(only: PortSet, cuts: Record<Protocol, Set<number>>): void {
  for (const protocol of PROTOCOLS)
    for (const [from, to] of only.ranges[protocol]) {
      cuts[protocol].add(from);
      if (to < 65535) cuts[protocol].add(to + 1);
    }
}

function emptyCuts(): Record<Protocol, Set<number>> {
  return { TCP: new Set([1]), UDP: new Set([1]), SCTP: new Set([1]) };
}

/**
 * The side of a class from its table (undefined: not isolated) and its tiers, over `family`;
 * `node` is the class's node when its own node's host-network classes are always allowed.
 * With `only`, the ports outside it are not decided (their pieces let no one through and do not
 * count against `open`): a matrix of one port asks nothing else, and deciding every piece of a
 * table of 10,000 rules each on a port of its own is 10⁸ rule visits per side.
 */
export function sideAnswer(
  nets: ClassNets,
  direction: Direction,
  family: IpFamily,
  table: RuleTable | undefined,
  tiers: TieredTable | undefined,
  node: string,
  only?: PortSet,
): SideAnswer {
  const all = nets.hasFamily(family);
  if (!table && !tiers) return openAnswer(all);
  const cuts = emptyCuts();
  if (only) onlyCuts(only, cuts);
  ruleCuts(table?.rules ?? [], cuts);
  ruleCuts([...(tiers?.admin ?? []), ...(tiers?.baseline ?? [])], cuts);
  const peerOf = (rule: Rule): NetRef => (direction === 'egress' ? rule.dst : rule.src);
  const local = node !== '' && table ? nets.hostNetworkOn(node, family) : EMPTY_SET;
  const pieces: SidePiece[] = [];
  let open = true;
  for (const protocol of PROTOCOLS) {
    const sorted = [...cuts[protocol]].sort((x, y) => x - y);
    sorted.forEach((from, i) => {
      const to = (sorted[i + 1] ?? 65536) - 1;
      // A piece lies wholly inside `only` or wholly outside it (its bounds are cuts).
      const asked = !only || portSetHas(only, protocol, from);
      const set = asked ? decide(nets, family, all, table, tiers, peerOf, protocol, from, local) : NO_PEERS;
      if (asked) open &&= set.length === 1 && setsEqual(set[0] as IntervalSet, all);
      const last = pieces[pieces.length - 1];
      // Neighbouring ranges deciding alike are one piece.
      if (last && last.protocol === protocol && samePeers(last.set, set))
        pieces[pieces.length - 1] = { ...last, to };
      else pieces.push({ protocol, from, to, set });
    });
  }
  return open ? openAnswer(all) : { open: false, pieces };
}

/** Whether a table is permit rules and, at most, the deny of everything else at its end. */
function permitsOnly(table: RuleTable): boolean {
  const rules = table.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as Rule;
    if (rule.action === 'permit') continue;
    const denyRest =
      i === rules.length - 1 &&
      rule.action === 'deny' &&
      rule.protocol === 'ANY' &&
      !rule.dstPorts &&
      rule.src.kind === 'any' &&
      rule.dst.kind === 'any';
    if (!denyRest) return false;
  }
  return true;
}

/** First match of one port through the tiers and the table, for every peer class at once. */
function decide(
  nets: ClassNets,
  family: IpFamily,
  all: IntervalSet,
  table: RuleTable | undefined,
  tiers: TieredTable | undefined,
  peerOf: (rule: Rule) => NetRef,
  protocol: Protocol,
  port: number,
  local: IntervalSet,
): PeerSet {
  if (!tiers && table && permitsOnly(table)) {
    // NetworkPolicy alone: permits and the deny-the-rest, so the order does not matter and the
    // peers allowed are the union of the matching permits' (and the own node's), kept as parts.
    const parts: IntervalSet[] = local.length > 0 ? [local] : [];
    for (const rule of table.rules) {
      if (rule.action !== 'permit') continue;
      if (rule.protocol !== 'ANY' && rule.protocol !== protocol) continue;
      if (rule.dstPorts && (port < rule.dstPorts[0] || port > rule.dstPorts[1])) continue;
      const part = nets.of(peerOf(rule), family);
      if (part.length > 0 && !parts.includes(part)) parts.push(part);
    }
    // One part that is everyone (an "allow from anywhere") is the whole answer.
    const everyone = parts.find((part) => setsEqual(part, all));
    return everyone ? [everyone] : parts;
  }
  let undecided = all;
  let allowed: IntervalSet = EMPTY_SET;
  let passed: IntervalSet = EMPTY_SET;
  const firstMatch = (rules: readonly Rule[], passes: boolean): void => {
    for (const rule of rules) {
      if (undecided.length === 0) return;
      if (rule.protocol !== 'ANY' && rule.protocol !== protocol) continue;
      if (rule.dstPorts && (port < rule.dstPorts[0] || port > rule.dstPorts[1])) continue;
      const hit = intersectSets(undecided, nets.of(peerOf(rule), family));
      if (hit.length === 0) continue;
      if (rule.action === 'permit') allowed = unionSets(allowed, hit);
      else if (rule.action === 'pass' && passes) passed = unionSets(passed, hit);
      undecided = subtractSets(undecided, hit);
    }
  };
  // A list of tiers (`breaks`: where each after the first starts): each tier's first match over
  // the peers still undecided, a pass going on to the next tier — out of the list (into
  // `passed`) from the last.
  const tiersInOrder = (rules: readonly Rule[], breaks: readonly number[] | undefined): void => {
    if (!breaks) return firstMatch(rules, true);
    const starts = [0, ...breaks, rules.length];
    for (let t = 0; t + 1 < starts.length; t++) {
      firstMatch(rules.slice(starts[t], starts[t + 1]), true);
      if (t + 2 < starts.length) {
        undecided = unionSets(undecided, passed);
        passed = EMPTY_SET;
      }
    }
  };
  if (tiers) tiersInOrder(tiers.admin, tiers.adminBreaks);
  undecided = unionSets(undecided, passed);
  if (table) {
    // A pod's own node is always allowed by NetworkPolicy.
    const own = intersectSets(undecided, local);
    allowed = unionSets(allowed, own);
    undecided = subtractSets(undecided, own);
    firstMatch(table.rules, false);
    return allowed.length > 0 ? [allowed] : NO_PEERS;
  }
  // Not isolated: the Baseline tier, where passing (like matching nothing) ends in allowed.
  passed = EMPTY_SET;
  if (tiers) tiersInOrder(tiers.baseline, tiers.baselineBreaks);
  const result = unionSets(unionSets(allowed, undecided), passed);
  return result.length > 0 ? [result] : NO_PEERS;
}
