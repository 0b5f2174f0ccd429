/**
 * The CFP's MapState: ordered rules compiled into a longest-prefix-match map that has no
 * priorities, so that the map's most precedent matching entry always carries the verdict of the
 * highest-priority matching rule.
 *
 * Rules are inserted in priority order. A key is refused when an entry already in the map (so of
 * higher priority) covers it — the new, more precedent key would override that entry (examples
 * 1a, 1b; 2a for a wildcard ancestor). A wildcard key that would override a higher-priority entry
 * of one identity on a wider port prefix is inserted, and a covering entry for that identity is
 * synthesized with the older verdict (example 2b). With exact-or-wildcard identities and port
 * prefixes these are the only conflicts: for one identity, keys on nested prefixes either cover
 * one another or are disjoint.
 *
 * The wildcard layer depends on the rules only; each identity's entries depend on the rules that
 * select it and on the wildcard layer. So an identity joining or leaving a selector recomputes
 * that identity's entries alone, in priority order (the CFP's incremental updates), and the
 * change is returned as entry additions and deletions for the datapath.
 */
import { keyNumber, PORT_BITS, prefixContains, prefixOf } from './port-prefix.ts';
import type { IdentityKey, MapChange, MapEntry, MapRule, PortPrefix, RefusedKey } from './types.ts';

type Entries<V> = Map<number, MapEntry<V>>;

export class MapState<V> {
  private rules: MapRule<V>[] = [];
  private readonly byLabel = new Map<string, MapRule<V>>();
  private readonly rulesOfIdentity = new Map<number, MapRule<V>[]>();
  private wildcard: Entries<V> = new Map();
  /** Wildcard entries per protocol, sorted by port value, for "entries inside this prefix" queries. */
  private wildcardSorted = new Map<number, MapEntry<V>[]>();
  private wildcardRefused: RefusedKey[] = [];
  private readonly specific = new Map<number, Entries<V>>();
  private readonly specificRefused = new Map<number, RefusedKey[]>();
  /** insertKey's scratch list of the keys a new key covers (kept to spare an array per call). */
  private readonly covered: number[] = [];

  /**
   * `recordRefused` keeps every refused key with the entry that covers it (for explanations and
   * the goldens); a datapath does not need them, and at scale they outnumber the entries.
   */
  constructor(
    rules: readonly MapRule<V>[] = [],
    private readonly options: { readonly recordRefused?: boolean } = {},
  ) {
    for (const rule of rules) this.index(rule);
    this.sortRules();
    this.rebuildWildcard();
    for (const identity of this.rulesOfIdentity.keys()) this.recompute(identity);
  }

  /** The entry the datapath would pick: longest port prefix, then specific before wildcard. */
  lookup(identity: number, protocol: number, port: number): MapEntry<V> | undefined {
    const own = this.specific.get(identity);
    for (let len = PORT_BITS; len >= 0; len--) {
      const key = keyNumber(protocol, len, prefixOf(port, len));
      const entry = own?.get(key) ?? this.wildcard.get(key);
      if (entry) return entry;
    }
    return undefined;
  }

  /** Every entry: by protocol, port, prefix length, then wildcard before identities. */
  entries(): MapEntry<V>[] {
    const all = [...this.wildcard.values()];
    for (const entries of this.specific.values()) for (const entry of entries.values()) all.push(entry);
    return all.sort(compareEntries);
  }

  /** Keys refused because a higher-priority entry covers them (with `recordRefused`). */
  refusedKeys(): RefusedKey[] {
    const all = [...this.wildcardRefused];
    for (const refused of this.specificRefused.values()) for (const key of refused) all.push(key);
    return all.sort((a, b) => compareKeys(a, b) || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
  }

  get ruleCount(): number {
    return this.rules.length;
  }

  /** Inserts a rule at its priority; other rules keep theirs (nothing is renumbered). */
  addRule(rule: MapRule<V>): MapChange<V>[] {
    if (rule.identities !== '*' && !this.options.recordRefused) return this.addRules([rule]);
    if (this.byLabel.has(rule.label)) throw new Error(`rule ${rule.label} is already in the map`);
    this.insertSorted(rule);
    return this.afterRuleChange(rule);
  }

  /**
   * Inserts several rules (one policy) in one transaction. Each rule goes into its place in the
   * lists it joins; the other identities' lists are not touched. Rules for specific identities
   * are inserted key by key (insertKey): the work is proportional to the identities and keys the
   * new rules have, not to the rules already there. A wildcard among them (or recorded refusals,
   * which the keys' neighbours would change) rebuilds the wildcard layer once and recomputes each
   * affected identity once.
   */
  addRules(rules: readonly MapRule<V>[]): MapChange<V>[] {
    for (const rule of rules) {
      if (this.byLabel.has(rule.label)) throw new Error(`rule ${rule.label} is already in the map`);
      this.insertSorted(rule);
    }
    const protocols = new Set(rules.filter((r) => r.identities === '*').map((r) => r.protocol));
    if (protocols.size === 0 && !this.options.recordRefused) return netChanges(this.insertKeys(rules));
    const changes: MapChange<V>[] = [];
    const identities = new Set<number>();
    for (const rule of rules) if (rule.identities !== '*') for (const i of rule.identities) identities.add(i);
    if (protocols.size > 0) {
      for (const change of this.rebuildWildcard()) changes.push(change);
      for (const [identity, list] of this.rulesOfIdentity)
        if (list.some((r) => protocols.has(r.protocol))) identities.add(identity);
    }
    for (const identity of identities) for (const change of this.recompute(identity)) changes.push(change);
    return netChanges(changes);
  }

  /**
   * New rules for specific identities, key by key in priority order, into a map that equals a
   * fresh build of the rules before them. A fresh build in priority order would have reached
   * each new key with exactly the entries of higher priority in place, so the key is refused
   * when one of those covers it; otherwise it takes its place and the lower-priority entries at
   * or inside its prefix, refused by it in a fresh build, leave. Nothing else of the identity
   * moves: no entry it removes had refused a key it does not cover itself. The covering entries
   * (example 2b) of the wildcard entries inside the prefix are computed again.
   */
  private insertKeys(rules: readonly MapRule<V>[]): MapChange<V>[] {
    const changes: MapChange<V>[] = [];
    // Stable: rules of equal priority keep their order, as insertSorted placed them.
    for (const rule of [...rules].sort(byPriority)) {
      if (rule.identities === '*') continue;
      for (const port of rule.ports) {
        // The wildcard layer refuses a key for every identity alike.
        if (coveringEntry(this.wildcard, rule.protocol, port, rule.priority)) continue;
        const inside = [...this.wildcardInside(rule.protocol, port)];
        for (const identity of rule.identities) this.insertKey(identity, rule, port, inside, changes);
      }
    }
    return changes;
  }

  private insertKey(
    identity: number,
    rule: MapRule<V>,
    port: PortPrefix,
    wildcardsInside: readonly MapEntry<V>[],
    changes: MapChange<V>[],
  ): void {
    const { protocol, priority } = rule;
    const key = keyNumber(protocol, port.len, port.value);
    let own = this.specific.get(identity);
    const covered = this.covered;
    covered.length = 0;
    if (own) {
      // One pass over the identity's few entries (seven on average at shape (a) ×1) instead of a
      // hash probe per prefix length: is the key refused, and which entries would it cover —
      // lower-priority ones at or inside its prefix (higher ones inside it stay: they are
      // longer), and a covering entry at its own key.
      for (const [at, entry] of own) {
        if (entry.protocol !== protocol) continue;
        const inserted = entry.coveredBy === undefined;
        if (inserted && entry.priority <= priority && prefixContains(entry.port, port)) return;
        if (prefixContains(port, entry.port) && (at === key || (inserted && entry.priority > priority)))
          covered.push(at);
      }
      for (const at of covered) {
        changes.push({ op: 'delete', entry: own.get(at) as MapEntry<V> });
        own.delete(at);
      }
    } else this.specific.set(identity, (own = new Map<number, MapEntry<V>>()));
    const entry = entryOf(rule, port, identity);
    own.set(key, entry);
    changes.push({ op: 'add', entry });
    for (const wild of wildcardsInside) this.coverAgain(own, wild, changes);
  }

  /**
   * The covering entry at a wildcard entry's key for one identity, as synthesizeCovering makes
   * it: the verdict of the longest own entry strictly containing it whose priority is not below
   * the wildcard's, unless an own entry sits at that very key.
   */
  private coverAgain(own: Entries<V>, wild: MapEntry<V>, changes: MapChange<V>[]): void {
    const { protocol, port } = wild;
    const key = keyNumber(protocol, port.len, port.value);
    const current = own.get(key);
    if (current && current.coveredBy === undefined) return;
    let next: MapEntry<V> | undefined;
    for (let len = port.len - 1; len >= 0 && !next; len--) {
      const outer = own.get(keyNumber(protocol, len, prefixOf(port.value, len)));
      if (outer && outer.coveredBy === undefined && outer.priority <= wild.priority)
        next = { ...outer, port, coveredBy: wild.rule };
    }
    if (current && next && sameEntry(current, next)) return;
    if (current) {
      own.delete(key);
      changes.push({ op: 'delete', entry: current });
    }
    if (next) {
      own.set(key, next);
      changes.push({ op: 'add', entry: next });
    }
  }

  removeRule(label: string): MapChange<V>[] {
    const rule = this.byLabel.get(label);
    if (!rule) return [];
    this.byLabel.delete(label);
    this.rules = this.rules.filter((r) => r !== rule);
    if (rule.identities !== '*') {
      for (const identity of rule.identities) {
        const list = (this.rulesOfIdentity.get(identity) ?? []).filter((r) => r !== rule);
        if (list.length) this.rulesOfIdentity.set(identity, list);
        else this.rulesOfIdentity.delete(identity);
      }
    }
    return this.afterRuleChange(rule);
  }

  /**
   * Several selectors changed in one transaction (an identity arriving is delivered to every
   * selector first): each identity that joined or left any of them is recomputed once, so the
   * datapath gets one consistent set of changes.
   */
  updateIdentities(
    updates: readonly { label: string; identities: ReadonlySet<number> | '*' }[],
  ): MapChange<V>[] {
    const changes: MapChange<V>[] = [];
    const touched = new Set<number>();
    for (const { label, identities } of updates) {
      const rule = this.byLabel.get(label);
      if (!rule) throw new Error(`no rule ${label} in the map`);
      if (rule.identities === '*' || identities === '*') {
        for (const change of this.setIdentities(label, identities)) changes.push(change);
        continue;
      }
      for (const identity of this.reindex(rule, identities)) touched.add(identity);
    }
    for (const identity of touched) for (const change of this.recompute(identity)) changes.push(change);
    return netChanges(changes);
  }

  /** A rule's selector now selects other identities: only those that joined or left are recomputed. */
  setIdentities(label: string, identities: ReadonlySet<number> | '*'): MapChange<V>[] {
    const rule = this.byLabel.get(label);
    if (!rule) throw new Error(`no rule ${label} in the map`);
    if (rule.identities === '*' || identities === '*') {
      return netChanges([...this.removeRule(label), ...this.addRule({ ...rule, identities })]);
    }
    return this.reindex(rule, identities).flatMap((identity) => this.recompute(identity));
  }

  /** Gives a specific rule new identities; returns the identities that joined or left. */
  private reindex(rule: MapRule<V>, identities: ReadonlySet<number>): number[] {
    const before = rule.identities === '*' ? new Set<number>() : rule.identities;
    const updated: MapRule<V> = { ...rule, identities };
    this.byLabel.set(rule.label, updated);
    this.rules = this.rules.map((r) => (r === rule ? updated : r));
    const changed = [...before].filter((i) => !identities.has(i));
    for (const identity of identities) if (!before.has(identity)) changed.push(identity);
    for (const identity of new Set([...before, ...identities])) {
      const list = (this.rulesOfIdentity.get(identity) ?? []).filter((r) => r !== rule);
      if (identities.has(identity)) list.push(updated);
      list.sort(byPriority);
      if (list.length) this.rulesOfIdentity.set(identity, list);
      else this.rulesOfIdentity.delete(identity);
    }
    return changed;
  }

  private index(rule: MapRule<V>): void {
    this.rules.push(rule);
    this.byLabel.set(rule.label, rule);
    if (rule.identities === '*') return;
    for (const identity of rule.identities) {
      const list = this.rulesOfIdentity.get(identity) ?? [];
      list.push(rule);
      this.rulesOfIdentity.set(identity, list);
    }
  }

  /** `index`, keeping the rule lists in priority order without sorting them again. */
  private insertSorted(rule: MapRule<V>): void {
    insertByPriority(this.rules, rule);
    this.byLabel.set(rule.label, rule);
    if (rule.identities === '*') return;
    for (const identity of rule.identities) {
      const list = this.rulesOfIdentity.get(identity);
      if (list) insertByPriority(list, rule);
      else this.rulesOfIdentity.set(identity, [rule]);
    }
  }

  private sortRules(): void {
    this.rules.sort(byPriority);
    for (const list of this.rulesOfIdentity.values()) list.sort(byPriority);
  }

  private afterRuleChange(rule: MapRule<V>): MapChange<V>[] {
    if (rule.identities !== '*') return [...rule.identities].flatMap((identity) => this.recompute(identity));
    const changes = this.rebuildWildcard();
    // A wildcard change can refuse or allow specific keys and covering entries of any identity
    // with rules on the same protocol.
    for (const [identity, rules] of this.rulesOfIdentity) {
      if (rules.some((r) => r.protocol === rule.protocol))
        for (const change of this.recompute(identity)) changes.push(change);
    }
    return changes;
  }

  /** The wildcard layer, in priority order; returns what changed in it. */
  private rebuildWildcard(): MapChange<V>[] {
    const before = this.wildcard;
    const entries: Entries<V> = new Map();
    const refused: RefusedKey[] = [];
    for (const rule of this.rules) {
      if (rule.identities !== '*') continue;
      for (const port of rule.ports) {
        const cover = coveringEntry(entries, rule.protocol, port);
        if (cover) {
          if (this.options.recordRefused) refused.push(refusal(rule, port, '*', cover));
          continue;
        }
        entries.set(keyNumber(rule.protocol, port.len, port.value), entryOf(rule, port, '*'));
      }
    }
    this.wildcard = entries;
    this.wildcardRefused = refused;
    this.wildcardSorted = new Map();
    for (const entry of entries.values()) {
      const list = this.wildcardSorted.get(entry.protocol) ?? [];
      list.push(entry);
      this.wildcardSorted.set(entry.protocol, list);
    }
    for (const list of this.wildcardSorted.values()) list.sort((a, b) => a.port.value - b.port.value);
    return diff(before, entries);
  }

  /** One identity's entries, from the rules selecting it and the wildcard layer. */
  private recompute(identity: number): MapChange<V>[] {
    const before = this.specific.get(identity) ?? new Map<number, MapEntry<V>>();
    const entries: Entries<V> = new Map();
    const refused: RefusedKey[] = [];
    for (const rule of this.rulesOfIdentity.get(identity) ?? []) {
      for (const port of rule.ports) {
        const cover =
          coveringEntry(entries, rule.protocol, port) ??
          coveringEntry(this.wildcard, rule.protocol, port, rule.priority);
        if (cover) {
          if (this.options.recordRefused) refused.push(refusal(rule, port, identity, cover));
          continue;
        }
        entries.set(keyNumber(rule.protocol, port.len, port.value), entryOf(rule, port, identity));
      }
    }
    this.synthesizeCovering(entries);
    if (entries.size) this.specific.set(identity, entries);
    else this.specific.delete(identity);
    if (refused.length) this.specificRefused.set(identity, refused);
    else this.specificRefused.delete(identity);
    return diff(before, entries);
  }

  /**
   * Example 2b: a lower-priority wildcard entry inside the port prefix of a higher-priority
   * identity entry would override it there; re-insert that entry's verdict at the wildcard's key
   * for this identity. The longest entry goes first (of nested entries that were inserted, the
   * longer has the higher priority), so each covering entry carries the verdict the map gave.
   */
  private synthesizeCovering(entries: Entries<V>): void {
    const own = [...entries.values()].sort((a, b) => b.port.len - a.port.len);
    for (const entry of own) {
      for (const wild of this.wildcardInside(entry.protocol, entry.port)) {
        if (wild.priority < entry.priority) continue;
        const key = keyNumber(wild.protocol, wild.port.len, wild.port.value);
        if (entries.has(key)) continue;
        entries.set(key, { ...entry, port: wild.port, coveredBy: wild.rule });
      }
    }
  }

  /** Wildcard entries strictly inside a prefix. */
  private *wildcardInside(protocol: number, port: PortPrefix): Generator<MapEntry<V>> {
    const list = this.wildcardSorted.get(protocol);
    if (!list) return;
    const end = port.value + 2 ** (PORT_BITS - port.len);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid] as MapEntry<V>).port.value < port.value) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < list.length; i++) {
      const entry = list[i] as MapEntry<V>;
      if (entry.port.value >= end) break;
      if (entry.port.len > port.len) yield entry;
    }
  }
}

function entryOf<V>(rule: MapRule<V>, port: PortPrefix, identity: IdentityKey): MapEntry<V> {
  return {
    protocol: rule.protocol,
    port,
    identity,
    verdict: rule.verdict,
    priority: rule.priority,
    rule: rule.label,
  };
}

function refusal<V>(
  rule: MapRule<V>,
  port: PortPrefix,
  identity: IdentityKey,
  cover: MapEntry<V>,
): RefusedKey {
  return { rule: rule.label, protocol: rule.protocol, port, identity, coveredBy: cover.rule };
}

/**
 * An entry at the same or a shorter prefix containing `port` (with a priority below `before`, if
 * given; a rule's own entry, not a synthesized covering one, if `inserted`).
 */
function coveringEntry<V>(
  entries: Entries<V>,
  protocol: number,
  port: PortPrefix,
  before = Infinity,
  inserted = false,
): MapEntry<V> | undefined {
  for (let len = 0; len <= port.len; len++) {
    const entry = entries.get(keyNumber(protocol, len, prefixOf(port.value, len)));
    if (
      entry &&
      entry.priority < before &&
      !(inserted && entry.coveredBy !== undefined) &&
      prefixContains(entry.port, port)
    )
      return entry;
  }
  return undefined;
}

function diff<V>(before: Entries<V>, after: Entries<V>): MapChange<V>[] {
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
function netChanges<V>(changes: readonly MapChange<V>[]): MapChange<V>[] {
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

function sameEntry<V>(a: MapEntry<V>, b: MapEntry<V>): boolean {
  return (
    a.verdict === b.verdict && a.priority === b.priority && a.rule === b.rule && a.coveredBy === b.coveredBy
  );
}

/** Inserts a rule into a list sorted by priority, after any of equal priority (as a stable sort would). */
function insertByPriority<V>(list: MapRule<V>[], rule: MapRule<V>): void {
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

function byPriority<V>(a: MapRule<V>, b: MapRule<V>): number {
  return a.priority - b.priority;
}

function compareKeys(
  a: { protocol: number; port: PortPrefix; identity: IdentityKey },
  b: { protocol: number; port: PortPrefix; identity: IdentityKey },
): number {
  const ia = a.identity === '*' ? -1 : a.identity;
  const ib = b.identity === '*' ? -1 : b.identity;
  return a.protocol - b.protocol || a.port.value - b.port.value || a.port.len - b.port.len || ia - ib;
}

function compareEntries<V>(a: MapEntry<V>, b: MapEntry<V>): number {
  return compareKeys(a, b);
}
