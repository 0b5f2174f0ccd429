/**
 * Semantic containment of rules, for redundancy and shadowing: does everything a set of rules
 * matches (`left`) lie inside what another set matches (`right`), for one subject endpoint?
 * "Everything" is every (peer, port) pair over three kinds of peer:
 * - endpoints: the candidates the left rules can match (found through the indexes, never by
 *   scanning the cluster), each checked against the right rules with the evaluator's own peer
 *   and port functions, per address family;
 * - addresses outside the cluster: ipBlocks, networks and node addresses as intervals; the
 *   address space is cut at every interval end and each piece compared once (a piece only holding
 *   endpoint addresses is left to the endpoint part);
 * - domain names (ClusterNetworkPolicy), compared as names.
 * Cost: left candidates × right rules, plus (left + right intervals)² — never pods² × rules².
 */
import { familyInterval, type IpInterval } from '../../net/intervals.ts';
import { formatIp, type IpFamily } from '../../net/ip.ts';
import { subtractPorts } from '../../model/port-set.ts';
import type { Endpoint, SourceLocation } from '../../model/types.ts';
import { EMPTY_PORTS, isNoPorts, unionPorts, type PortSet } from '../../semantics/index.ts';
import type { EndpointIndex } from '../endpoint-index.ts';

/** A rule, for naming it in findings. */
export interface RuleRef {
  /** `shop/api ingress[0]`, `anp/x egress[2] "name"`. */
  readonly label: string;
  readonly object: string;
  readonly path: readonly (string | number)[];
  readonly location?: SourceLocation;
}

/** One peer of a rule with the rule's ports, in the form containment reasons about. */
export interface CoverItem {
  readonly rule: RuleRef;
  /** Whether the peer matches the endpoint over the family (undefined: an endpoint without addresses). */
  matches(endpoint: Endpoint, family: IpFamily | undefined): boolean;
  /** Addresses the peer matches as plain addresses (ipBlocks, networks, nodes; everything for "anywhere"). */
  readonly intervals: readonly IpInterval[];
  readonly domains: readonly string[];
  /** Endpoints the peer can match (a superset is fine, a subset is not). */
  candidates(): Iterable<Endpoint>;
  /** The rule's ports towards an endpoint (named ports resolved against it where the API says so) or a plain address (`undefined`). */
  ports(endpoint: Endpoint | undefined): PortSet;
}

export const EVERY_ADDRESS: readonly IpInterval[] = [familyInterval(4), familyInterval(6)];

interface CoverResult {
  readonly contained: boolean;
  /** Right-hand rules that cover some of the left side (all of it, when contained). */
  readonly covering: readonly RuleRef[];
  /** When not contained: one thing the left side matches and the right does not, for people. */
  readonly witness?: string;
  /** True when the left side matches nothing at all (nothing to contain). */
  readonly empty: boolean;
}

/**
 * Whether `left` ⊆ `right` for a subject whose address families are `families` (undefined:
 * the subject has no address, so any family can reach it).
 */
export function covers(
  left: readonly CoverItem[],
  right: readonly CoverItem[],
  index: EndpointIndex,
  families: readonly IpFamily[] | undefined,
): CoverResult {
  const covering = new Set<RuleRef>();
  const seen = { something: false };
  const witness =
    domainsCovered(left, right, covering, seen) ??
    addressesCovered(left, right, index, families, covering, seen) ??
    endpointsCovered(left, right, families, covering, seen);
  if (witness) return { contained: false, covering: [], witness, empty: false };
  return { contained: true, covering: [...covering], empty: !seen.something };
}

/** Set once the left side is found to match something. */
interface Seen {
  something: boolean;
}

function isSubset(a: PortSet, b: PortSet): boolean {
  return isNoPorts(subtractPorts(a, b));
}

function domainsCovered(
  left: readonly CoverItem[],
  right: readonly CoverItem[],
  covering: Set<RuleRef>,
  seen: Seen,
): string | undefined {
  for (const item of left) {
    for (const name of item.domains) {
      const wanted = item.ports(undefined);
      if (isNoPorts(wanted)) continue;
      seen.something = true;
      let got = EMPTY_PORTS;
      for (const other of right) {
        if (!other.domains.some((pattern) => domainCovers(pattern, name))) continue;
        got = unionPorts(got, other.ports(undefined));
        covering.add(other.rule);
      }
      if (!isSubset(wanted, got)) return `domain ${name}`;
    }
  }
  return undefined;
}

/** `*.example.com` covers `a.example.com` and `*.a.example.com`; otherwise only equal names. */
function domainCovers(pattern: string, name: string): boolean {
  if (pattern === name || pattern === '*') return true;
  if (!pattern.startsWith('*.')) return false;
  const suffix = pattern.slice(1);
  const bare = name.startsWith('*.') ? name.slice(1) : name;
  return bare.endsWith(suffix) && bare.length > suffix.length;
}

function addressesCovered(
  left: readonly CoverItem[],
  right: readonly CoverItem[],
  index: EndpointIndex,
  families: readonly IpFamily[] | undefined,
  covering: Set<RuleRef>,
  seen: Seen,
): string | undefined {
  const relevant = (interval: IpInterval): boolean => !families || families.includes(interval.family);
  const leftItems = left.filter((item) => item.intervals.some(relevant));
  if (leftItems.length === 0) return undefined;
  const rightItems = right.filter((item) => item.intervals.some(relevant));
  for (const family of [4, 6] as const) {
    if (families && !families.includes(family)) continue;
    const cuts = new Set<bigint>();
    for (const item of [...leftItems, ...rightItems])
      for (const i of item.intervals)
        if (i.family === family) {
          cuts.add(i.lo);
          cuts.add(i.hi + 1n);
        }
    const points = [...cuts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (let p = 0; p + 1 < points.length; p++) {
      const piece: IpInterval = { family, lo: points[p] as bigint, hi: (points[p + 1] as bigint) - 1n };
      const inside = (item: CoverItem): boolean =>
        item.intervals.some((i) => i.family === family && i.lo <= piece.lo && i.hi >= piece.hi);
      let wanted = EMPTY_PORTS;
      for (const item of leftItems) if (inside(item)) wanted = unionPorts(wanted, item.ports(undefined));
      if (isNoPorts(wanted)) continue;
      seen.something = true;
      let got = EMPTY_PORTS;
      for (const item of rightItems) {
        if (!inside(item)) continue;
        got = unionPorts(got, item.ports(undefined));
        covering.add(item.rule);
      }
      if (isSubset(wanted, got)) continue;
      // Only endpoint addresses here? Then the endpoint part decides.
      const free = index.freeAddress(piece);
      if (!free) continue;
      return `address ${formatIp(free)}`;
    }
  }
  return undefined;
}

function endpointsCovered(
  left: readonly CoverItem[],
  right: readonly CoverItem[],
  families: readonly IpFamily[] | undefined,
  covering: Set<RuleRef>,
  seen: Seen,
): string | undefined {
  const done = new Set<Endpoint>();
  for (const item of left) {
    for (const endpoint of item.candidates()) {
      if (done.has(endpoint)) continue;
      done.add(endpoint);
      for (const family of endpointFamilies(endpoint, families)) {
        let wanted = EMPTY_PORTS;
        for (const l of left) if (l.matches(endpoint, family)) wanted = unionPorts(wanted, l.ports(endpoint));
        if (isNoPorts(wanted)) continue;
        seen.something = true;
        let got = EMPTY_PORTS;
        for (const r of right) {
          if (!r.matches(endpoint, family)) continue;
          got = unionPorts(got, r.ports(endpoint));
          covering.add(r.rule);
          if (isSubset(wanted, got)) break;
        }
        if (!isSubset(wanted, got)) return endpoint.id;
      }
    }
  }
  return undefined;
}

/**
 * The families a connection between the subject and an endpoint can use, as the evaluator
 * decides them; `[undefined]` when neither side has an address (peers match by selectors only).
 */
function endpointFamilies(
  endpoint: Endpoint,
  subject: readonly IpFamily[] | undefined,
): readonly (IpFamily | undefined)[] {
  const own = [...new Set(endpoint.ips.map((ip) => ip.family))];
  if (own.length === 0) return subject ?? [undefined];
  if (!subject) return own;
  return own.filter((f) => subject.includes(f));
}
