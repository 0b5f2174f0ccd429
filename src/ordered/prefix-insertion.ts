/**
 * The CFP's priority-aware insertion (seed 004) for rule keys made of address prefixes, a
 * protocol and a destination-port range — the keys of VPP's tables — so that an ordered
 * (first-match) rule list becomes a set of entries with no order of its own: for every packet,
 * the most specific entry that matches it carries the verdict of the first rule that matches it.
 * Such a set is what a longest-prefix-match datapath (VPPTCP's session rules) can hold, and it
 * keeps its meaning under the seed's canonical sort (subsets first), which every table of the
 * renderer cache goes through.
 *
 * Rules are inserted in priority (list) order, and after each insertion the entries are closed
 * under intersection (two overlapping entries' intersection is an entry too), so the entries
 * containing a packet always have one smallest member, the one that decides it:
 * - a key covered by an entry already there (so of higher priority) is refused — every packet it
 *   matches is decided already (the CFP's examples 1a, 1b, 2a);
 * - where the new key partly overlaps an entry, the overlap is inserted with the verdict that
 *   decided it so far, since the new, lower-priority key would otherwise override it there (the
 *   covering entries of example 2b).
 * Nets are CIDRs or "any" (groups are expanded by the caller); `pass` is resolved by the caller.
 */
import { cidrCovers } from '../net/ip.ts';
import { compareRules, ruleText, type NetRef, type Rule } from '../model/rule.ts';
import { MAX_PORT, MIN_PORT } from '../model/port-set.ts';

type Decided = Rule & { readonly action: 'permit' | 'deny' };

/** The entries equivalent to first match over `ordered` (in no particular order). */
export function insertByPriority(ordered: readonly Decided[]): Decided[] {
  const entries = new Map<string, Decided>();
  for (const rule of ordered) {
    const key = keyOf(rule);
    if (entries.has(key)) continue;
    let covered = false;
    const overlaps: Decided[] = [];
    for (const entry of entries.values()) {
      if (covers(entry, rule)) {
        covered = true;
        break;
      }
      if (covers(rule, entry)) continue;
      const overlap = intersect(entry, rule);
      if (overlap && !entries.has(keyOf(overlap))) overlaps.push(overlap);
    }
    if (covered) continue;
    // Each overlap keeps the verdict of the smallest entry containing it, found before any is added.
    const covering = overlaps.map((overlap) => ({ ...overlap, action: smallestCovering(entries, overlap) }));
    for (const entry of covering) entries.set(keyOf(entry), entry);
    entries.set(key, rule);
  }
  return [...entries.values()];
}

function smallestCovering(entries: ReadonlyMap<string, Decided>, key: Rule): Decided['action'] {
  let best: Decided | undefined;
  for (const entry of entries.values())
    if (covers(entry, key) && (!best || compareRules(entry, best) < 0)) best = entry;
  if (!best) throw new Error(`no entry covers ${ruleText(key)}`);
  return best.action;
}

/** What a rule matches, as text (action and precedence left out). */
const keyOf = ({ precedence: _precedence, ...rule }: Rule): string => ruleText({ ...rule, action: 'permit' });

function ports(rule: Rule): readonly [number, number] {
  return rule.dstPorts ?? [MIN_PORT, MAX_PORT];
}

function netCovers(outer: NetRef, inner: NetRef): boolean {
  if (outer.kind === 'any') return true;
  if (outer.kind !== 'cidr' || inner.kind !== 'cidr') return false;
  return cidrCovers(outer.cidr, inner.cidr);
}

/** True when every packet `inner` matches, `outer` matches. */
function covers(outer: Rule, inner: Rule): boolean {
  const [of, ot] = ports(outer);
  const [inf, int] = ports(inner);
  return (
    (outer.protocol === 'ANY' || outer.protocol === inner.protocol) &&
    of <= inf &&
    int <= ot &&
    netCovers(outer.src, inner.src) &&
    netCovers(outer.dst, inner.dst)
  );
}

function intersectNets(a: NetRef, b: NetRef): NetRef | undefined {
  if (a.kind === 'any') return b;
  if (b.kind === 'any') return a;
  if (netCovers(a, b)) return b;
  if (netCovers(b, a)) return a;
  return undefined;
}

/** The packets both match, as a key (with `a`'s action), or undefined when they share none. */
export function intersect<R extends Rule>(a: R, b: Rule): R | undefined {
  const protocol =
    a.protocol === 'ANY'
      ? b.protocol
      : b.protocol === 'ANY' || b.protocol === a.protocol
        ? a.protocol
        : undefined;
  if (protocol === undefined) return undefined;
  const [af, at] = ports(a);
  const [bf, bt] = ports(b);
  const from = Math.max(af, bf);
  const to = Math.min(at, bt);
  if (from > to) return undefined;
  const src = intersectNets(a.src, b.src);
  const dst = intersectNets(a.dst, b.dst);
  if (!src || !dst) return undefined;
  const { dstPorts: _ports, precedence: _precedence, ...rest } = a;
  const all = from === MIN_PORT && to === MAX_PORT;
  return { ...rest, protocol, src, dst, ...(all ? {} : { dstPorts: [from, to] as const }) } as R;
}
