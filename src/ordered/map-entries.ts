/**
 * Small pieces the MapState is built from: entries and refused keys made from rules, the
 * covering-entry probe, diffs between entry maps, and the orders entries are listed in.
 */
import { keyNumber, prefixContains, prefixOf } from './port-prefix.ts';
import type { IdentityKey, MapChange, MapEntry, MapRule, PortPrefix, RefusedKey } from './types.ts';

/** Entries by key number (keyNumber of protocol and port prefix; the identity is the map's own). */
export type Entries<V> = Map<number, MapEntry<V>>;

export function entryOf<V>(rule: MapRule<V>, port: PortPrefix, identity: IdentityKey): MapEntry<V> {
  return {
    protocol: rule.protocol,
    port,
    identity,
    verdict: rule.verdict,
    priority: rule.priority,
    rule: rule.label,
  };
}

/** An entry shared by an identity class, given to one of its identities. */
export function withIdentity<V>(entry: MapEntry<V>, identity: number): MapEntry<V> {
  const { protocol, port, verdict, priority, rule, coveredBy } = entry;
  return coveredBy === undefined
    ? { protocol, port, identity, verdict, priority, rule }
    : { protocol, port, identity, verdict, priority, rule, coveredBy };
}

export function refusal<V>(
  rule: MapRule<V>,
  port: PortPrefix,
  identity: IdentityKey,
  cover: MapEntry<V>,
): RefusedKey {
  return { rule: rule.label, protocol: rule.protocol, port, identity, coveredBy: cover.rule };
}

/** An entry at the same or a shorter prefix containing `port` (with a priority below `before`, if given). */
export function coveringEntry<V>(
  entries: Entries<V>,
  protocol: number,
  port: PortPrefix,
  before = Infinity,
): MapEntry<V> | undefined {
  for (let len = 0; len <= port.len; len++) {
    const entry = entries.get(keyNumber(protocol, len, prefixOf(port.value, len)));
    if (entry && entry.priority < before && prefixContains(entry.port, port)) return entry;
  }
  return undefined;
}

/** The changes that turn one entry map into another. */
export function diff<V>(before: Entries<V>, after: Entries<V>): MapChange<V>[] {
  const changes: MapChange<V>[] = [];
  for (const [key, entry] of before) {
    const now = after.get(key);
    if (!now || !sameEntry(now, entry)) changes.push({ op: 'delete', entry });
  }
  for (const [key, entry] of after) {
    const was = before.get(key);
    if (!was || !sameEntry(was, entry)) changes.push({ op: 'add', entry });
  }
  return changes;
}

/** Several steps' changes as one: a key's first state against its last, nothing in between. */
export function netChanges<V>(changes: readonly MapChange<V>[]): MapChange<V>[] {
  const byKey = new Map<string, { before: MapEntry<V> | undefined; after: MapEntry<V> | undefined }>();
  for (const change of changes) {
    const { protocol, port, identity } = change.entry;
    const key = `${protocol}/${port.len}/${port.value}/${identity}`;
    const after = change.op === 'add' ? change.entry : undefined;
    const seen = byKey.get(key);
    if (seen) seen.after = after;
    else byKey.set(key, { before: change.op === 'delete' ? change.entry : undefined, after });
  }
  const result: MapChange<V>[] = [];
  for (const { before, after } of byKey.values()) {
    if (before && after && sameEntry(before, after)) continue;
    if (before) result.push({ op: 'delete', entry: before });
    if (after) result.push({ op: 'add', entry: after });
  }
  return result;
}

/**
 * An empty array that holds objects from the start. `[]` starts as an array of small integers and
 * changes kind at its first object; code optimized on a map whose array has changed is thrown
 * away when it meets a new map's array that has not (each new map's first insertion, and each
 * of the benchmark's fresh copies). For arrays the insertion fills with objects.
 */
export function objectArray<T>(): T[] {
  const array: T[] = [undefined as T];
  array.length = 0;
  return array;
}

/** Same verdict from the same rule (the identity and key are the caller's to compare). */
export function sameEntry<V>(a: MapEntry<V>, b: MapEntry<V>): boolean {
  return (
    a.verdict === b.verdict && a.priority === b.priority && a.rule === b.rule && a.coveredBy === b.coveredBy
  );
}

/** Inserts a rule into a list sorted by priority, after any of equal priority (as a stable sort would). */
export function insertRuleByPriority<V>(list: MapRule<V>[], rule: MapRule<V>): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as MapRule<V>).priority <= rule.priority) lo = mid + 1;
    else hi = mid;
  }
  if (lo === list.length) list.push(rule);
  else list.splice(lo, 0, rule);
}

export function byPriority<V>(a: MapRule<V>, b: MapRule<V>): number {
  return a.priority - b.priority;
}

/** By protocol, port, prefix length, then wildcard before identities. */
export function compareKeys(
  a: { protocol: number; port: PortPrefix; identity: IdentityKey },
  b: { protocol: number; port: PortPrefix; identity: IdentityKey },
): number {
  const ia = a.identity === '*' ? -1 : a.identity;
  const ib = b.identity === '*' ? -1 : b.identity;
  return a.protocol - b.protocol || a.port.value - b.port.value || a.port.len - b.port.len || ia - ib;
}
