/**
 * Identity classes: identities selected by the same rules have the same entries but for the
 * identity itself (with pod addresses as identities, every replica of a workload). The MapState
 * computes entries once per class, on top of the wildcard layer, and hands them to the class's
 * members when it reports changes. Entries of a class carry the wildcard identity as a
 * placeholder; `withIdentity` gives them a member's.
 */
import { type Entries, byPriority, coveringEntry, entryOf, refusal, sameEntry } from './map-entries.ts';
import { keyNumber, prefixContains, prefixOf } from './port-prefix.ts';
import type { MapEntry, MapRule, RefusedKey } from './types.ts';
import type { Groupable } from './transaction-groups.ts';
import type { WildcardLayer } from './wildcard-layer.ts';

export interface IdentityClass<V> extends Groupable {
  /**
   * The rule set's key (ruleSetKey): equal sets, equal keys. Kept as its two halves and the
   * length too, so a class's key with more rules is computed from them without the list. A
   * class whose members all move to a set no identity has becomes that set's class in place.
   */
  signature: string;
  hashes: RuleSetHash;
  /** The rules selecting the members, in priority order. */
  rules: readonly MapRule<V>[];
  entries: Entries<V>;
  /** Refused keys (when the map records them), with the placeholder identity. */
  refused: RefusedKey[];
  /**
   * How many identities are in the class (the MapState's index says which): kept as a count, as
   * a set of members cost a hash insertion and deletion per identity that moves.
   */
  size: number;
}

/**
 * A rule set hashed the Zobrist way: each rule label draws two random 32-bit words (splitmix32 of
 * its serial number), a set XORs its rules' words, so adding rules to a set costs one XOR per
 * added rule. Two different sets of one length share a key with odds of 2^-64 per pair.
 */
export interface RuleSetHash {
  readonly high: number;
  readonly low: number;
  readonly length: number;
}

export const EMPTY_SET_HASH: RuleSetHash = { high: 0, low: 0, length: 0 };

export function ruleSetKey(hash: RuleSetHash): string {
  return `${hash.length}:${hash.high}:${hash.low}`;
}

/** The set's hash with the rules (serial numbers) added, none of which it holds. */
export function withRules(hash: RuleSetHash, serials: readonly number[]): RuleSetHash {
  let { high, low } = hash;
  for (const serial of serials) {
    high ^= splitmix32(serial * 2);
    low ^= splitmix32(serial * 2 + 1);
  }
  return { high, low, length: hash.length + serials.length };
}

function splitmix32(seed: number): number {
  let z = (seed + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** A class's entries from its rules, in priority order (a fresh build). */
export function classEntries<V>(
  rules: readonly MapRule<V>[],
  wildcard: WildcardLayer<V>,
  recordRefused: boolean,
): { entries: Entries<V>; refused: RefusedKey[] } {
  const entries: Entries<V> = new Map();
  const refused: RefusedKey[] = [];
  for (const rule of rules) {
    for (const port of rule.ports) {
      const cover =
        coveringEntry(entries, rule.protocol, port) ??
        coveringEntry(wildcard.entries, rule.protocol, port, rule.priority);
      if (cover) {
        if (recordRefused) refused.push(refusal(rule, port, '*', cover));
        continue;
      }
      entries.set(keyNumber(rule.protocol, port.len, port.value), entryOf(rule, port, '*'));
    }
  }
  synthesizeCovering(entries, wildcard);
  return { entries, refused };
}

/**
 * Example 2b: a lower-priority wildcard entry inside the port prefix of a higher-priority
 * identity entry would override it there; re-insert that entry's verdict at the wildcard's key
 * for this identity. The longest entry goes first (of nested entries that were inserted, the
 * longer has the higher priority), so each covering entry carries the verdict the map gave.
 */
function synthesizeCovering<V>(entries: Entries<V>, wildcard: WildcardLayer<V>): void {
  const own = [...entries.values()].sort((a, b) => b.port.len - a.port.len);
  for (const entry of own) {
    for (const wild of wildcard.inside(entry.protocol, entry.port)) {
      if (wild.priority < entry.priority) continue;
      const key = keyNumber(wild.protocol, wild.port.len, wild.port.value);
      if (entries.has(key)) continue;
      entries.set(key, { ...entry, port: wild.port, coveredBy: wild.rule });
    }
  }
}

/**
 * New rules for specific identities, key by key in priority order, into `entries` (a copy of a
 * class's entries, which equal a fresh build of the rules before them). A fresh build in
 * priority order would have reached each new key with exactly the entries of higher priority in
 * place, so the key is refused when one of those covers it; otherwise it takes its place and the
 * lower-priority entries at or inside its prefix, refused by it in a fresh build, leave. Nothing
 * else moves: no entry it removes had refused a key it does not cover itself. The covering
 * entries (example 2b) of the wildcard entries inside the prefix are computed again.
 */
export function insertKeys<V>(
  entries: Entries<V>,
  rules: readonly MapRule<V>[],
  wildcard: WildcardLayer<V>,
): void {
  const covered: number[] = [];
  // Stable: rules of equal priority keep their order, as the lists place them.
  for (const rule of [...rules].sort(byPriority)) {
    const { protocol, priority } = rule;
    for (const port of rule.ports) {
      // The wildcard layer refuses a key for every identity alike.
      if (coveringEntry(wildcard.entries, protocol, port, priority)) continue;
      const key = keyNumber(protocol, port.len, port.value);
      covered.length = 0;
      let refused = false;
      for (const [at, entry] of entries) {
        if (entry.protocol !== protocol) continue;
        const inserted = entry.coveredBy === undefined;
        if (inserted && entry.priority <= priority && prefixContains(entry.port, port)) {
          refused = true;
          break;
        }
        // Lower-priority entries at or inside the prefix leave (higher ones inside it stay: they
        // are longer), and so does a covering entry at its own key.
        if (prefixContains(port, entry.port) && (at === key || (inserted && entry.priority > priority)))
          covered.push(at);
      }
      if (refused) continue;
      for (const at of covered) entries.delete(at);
      entries.set(key, entryOf(rule, port, '*'));
      for (const wild of wildcard.inside(protocol, port)) coverAgain(entries, wild);
    }
  }
}

/**
 * The covering entry at a wildcard entry's key, as synthesizeCovering makes it: the verdict of
 * the longest own entry strictly containing it whose priority is not below the wildcard's,
 * unless an own entry sits at that very key.
 */
function coverAgain<V>(entries: Entries<V>, wild: MapEntry<V>): void {
  const { protocol, port } = wild;
  const key = keyNumber(protocol, port.len, port.value);
  const current = entries.get(key);
  if (current && current.coveredBy === undefined) return;
  let next: MapEntry<V> | undefined;
  for (let len = port.len - 1; len >= 0 && !next; len--) {
    const outer = entries.get(keyNumber(protocol, len, prefixOf(port.value, len)));
    if (outer && outer.coveredBy === undefined && outer.priority <= wild.priority)
      next = { ...outer, port, coveredBy: wild.rule };
  }
  if (current && next && sameEntry(current, next)) return;
  if (current) entries.delete(key);
  if (next) entries.set(key, next);
}
