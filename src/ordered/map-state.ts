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
 * select it and on the wildcard layer. Identities selected by the same rules share one class
 * (identity-class.ts) whose entries are computed once; an identity joining or leaving a selector
 * moves to the class of its new rule list (the CFP's incremental updates), and the change is
 * returned as entry additions and deletions, per identity, for the datapath.
 */
import {
  EMPTY_SET_HASH,
  type IdentityClass,
  type RuleSetHash,
  classEntries,
  insertKeys,
  ruleSetKey,
  withRules,
} from './identity-class.ts';
import {
  type Entries,
  byPriority,
  compareKeys,
  diff,
  insertRuleByPriority,
  netChanges,
  objectArray,
  withIdentity,
} from './map-entries.ts';
import { IdentityIndex } from './identity-index.ts';
import { PORT_BITS, keyNumber, prefixOf } from './port-prefix.ts';
import { TransactionGroups } from './transaction-groups.ts';
import type { MapChange, MapEntry, MapRule, RefusedKey } from './types.ts';
import { WildcardLayer } from './wildcard-layer.ts';

const NO_ENTRIES: Entries<never> = new Map();

/** Where one group of a transaction's identities goes (MapState.moveGroup). */
interface Move<V> {
  /** The class the group left (to drop if it is left empty). */
  readonly from: IdentityClass<V> | undefined;
  readonly to: IdentityClass<V> | undefined;
  /** The changes of each member (with the placeholder identity). */
  readonly changed: readonly MapChange<V>[];
  /** Whether the members' index entries change (not when their class changed in place). */
  readonly moves: boolean;
}

export class MapState<V> {
  private rules: MapRule<V>[] = [];
  private readonly byLabel = new Map<string, MapRule<V>>();
  private readonly wildcard = new WildcardLayer<V>();
  /** The class of every identity some rule selects. */
  private readonly classOf = new IdentityIndex<IdentityClass<V>>();
  /** Classes with members, by signature. */
  private readonly classes = new Map<string, IdentityClass<V>>();
  /** A serial number per rule label, for class signatures. */
  private readonly serials = new Map<string, number>();
  /** Groups a transaction's identities (one object for every transaction, see there). */
  private readonly grouping = new TransactionGroups<IdentityClass<V>>(this.classOf);
  private readonly recordRefused: boolean;

  /**
   * `recordRefused` keeps every refused key with the entry that covers it (for explanations and
   * the goldens); a datapath does not need them, and at scale they outnumber the entries.
   */
  constructor(rules: readonly MapRule<V>[] = [], options: { readonly recordRefused?: boolean } = {}) {
    this.recordRefused = options.recordRefused ?? false;
    for (const rule of rules) {
      this.rules.push(rule);
      this.byLabel.set(rule.label, rule);
    }
    this.rules.sort(byPriority);
    this.wildcard.rebuild(this.rules, this.recordRefused);
    this.buildClasses();
  }

  /** The entry the datapath would pick: longest port prefix, then specific before wildcard. */
  lookup(identity: number, protocol: number, port: number): MapEntry<V> | undefined {
    const own = this.classOf.get(identity)?.entries;
    for (let len = PORT_BITS; len >= 0; len--) {
      const key = keyNumber(protocol, len, prefixOf(port, len));
      const entry = own?.get(key);
      if (entry) return withIdentity(entry, identity);
      const wild = this.wildcard.entries.get(key);
      if (wild) return wild;
    }
    return undefined;
  }

  /** Every entry: by protocol, port, prefix length, then wildcard before identities. */
  entries(): MapEntry<V>[] {
    const all = [...this.wildcard.entries.values()];
    this.classOf.forEach((identity, { entries }) => {
      for (const entry of entries.values()) all.push(withIdentity(entry, identity));
    });
    return all.sort(compareKeys);
  }

  /** Keys refused because a higher-priority entry covers them (with `recordRefused`). */
  refusedKeys(): RefusedKey[] {
    const all = [...this.wildcard.refused];
    this.classOf.forEach((identity, { refused }) => {
      for (const key of refused) all.push({ ...key, identity });
    });
    return all.sort((a, b) => compareKeys(a, b) || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
  }

  get ruleCount(): number {
    return this.rules.length;
  }

  /** How many classes of identities (identities selected by the same rules) the map holds. */
  get classCount(): number {
    return this.classes.size;
  }

  /** Inserts a rule at its priority; other rules keep theirs (nothing is renumbered). */
  addRule(rule: MapRule<V>): MapChange<V>[] {
    return this.addRules([rule]);
  }

  /**
   * Inserts several rules (one policy) in one transaction. The identities the new rules select
   * are grouped by their class and by which new rules select them; each group's new class is
   * computed once — key by key from the old class's entries (insertKeys), so the work grows with
   * the classes and keys the new rules touch, not with the rules already there — and each member
   * gets the group's changes. A wildcard among the new rules rebuilds the wildcard layer once and
   * recomputes each class with rules on its protocols.
   */
  addRules(rules: readonly MapRule<V>[]): MapChange<V>[] {
    for (const rule of rules) {
      if (this.byLabel.has(rule.label)) throw new Error(`rule ${rule.label} is already in the map`);
      insertRuleByPriority(this.rules, rule);
      this.byLabel.set(rule.label, rule);
    }
    const protocols = new Set(rules.filter((r) => r.identities === '*').map((r) => r.protocol));
    const changes: MapChange<V>[] = objectArray();
    if (protocols.size > 0) {
      for (const change of this.wildcard.rebuild(this.rules, this.recordRefused)) changes.push(change);
      this.recomputeClasses(protocols, changes);
    }
    const specific = rules.filter((r) => r.identities !== '*');
    const keyByKey = protocols.size === 0 && !this.recordRefused;
    this.regroup([], specific, new Set(), keyByKey, changes);
    // Per identity, the regrouping's changes are net already; a class recomputed first is not.
    return protocols.size > 0 ? netChanges(changes) : changes;
  }

  removeRule(label: string): MapChange<V>[] {
    const rule = this.byLabel.get(label);
    if (!rule) return [];
    this.byLabel.delete(label);
    this.rules = this.rules.filter((r) => r !== rule);
    const changes: MapChange<V>[] = [];
    if (rule.identities === '*') {
      for (const change of this.wildcard.rebuild(this.rules, this.recordRefused)) changes.push(change);
      this.recomputeClasses(new Set([rule.protocol]), changes);
    } else this.regroup(rule.identities, [], new Set([label]), false, changes);
    return changes;
  }

  /**
   * Several selectors changed in one transaction (an identity arriving is delivered to every
   * selector first): each identity that joined or left any of them moves once, so the datapath
   * gets one consistent set of changes.
   */
  updateIdentities(
    updates: readonly { label: string; identities: ReadonlySet<number> | '*' }[],
  ): MapChange<V>[] {
    const changes: MapChange<V>[] = [];
    const updated = new Map<string, MapRule<V>>();
    const touched = new Set<number>();
    const flush = () => {
      this.regroup(touched, [...updated.values()], new Set(updated.keys()), false, changes);
      updated.clear();
      touched.clear();
    };
    for (const { label, identities } of updates) {
      const rule = this.byLabel.get(label);
      if (!rule) throw new Error(`no rule ${label} in the map`);
      if (rule.identities === '*' || identities === '*') {
        // In order: what came before it in the transaction is in the classes first.
        flush();
        for (const change of this.setIdentities(label, identities)) changes.push(change);
        continue;
      }
      for (const identity of this.reindex(rule, identities)) touched.add(identity);
      updated.set(label, this.byLabel.get(label) as MapRule<V>);
    }
    flush();
    return netChanges(changes);
  }

  /** A rule's selector now selects other identities: only those that joined or left move. */
  setIdentities(label: string, identities: ReadonlySet<number> | '*'): MapChange<V>[] {
    const rule = this.byLabel.get(label);
    if (!rule) throw new Error(`no rule ${label} in the map`);
    if (rule.identities === '*' || identities === '*') {
      return netChanges([...this.removeRule(label), ...this.addRule({ ...rule, identities })]);
    }
    const changes: MapChange<V>[] = [];
    const changed = this.reindex(rule, identities);
    this.regroup(changed, [this.byLabel.get(label) as MapRule<V>], new Set([label]), false, changes);
    return changes;
  }

  /** Gives a specific rule new identities; returns the identities that joined or left. */
  private reindex(rule: MapRule<V>, identities: ReadonlySet<number>): number[] {
    const before = rule.identities === '*' ? new Set<number>() : rule.identities;
    const updated: MapRule<V> = { ...rule, identities };
    this.byLabel.set(rule.label, updated);
    this.rules = this.rules.map((r) => (r === rule ? updated : r));
    const changed = [...before].filter((i) => !identities.has(i));
    for (const identity of identities) if (!before.has(identity)) changed.push(identity);
    return changed;
  }

  /**
   * The classes of a fresh build: each identity walks the path of the rules selecting it, in
   * priority order; identities that end on the same step share a class.
   */
  private buildClasses(): void {
    interface Step {
      readonly parent: Step | undefined;
      readonly rule: MapRule<V> | undefined;
      readonly next: Map<MapRule<V>, Step>;
    }
    const root: Step = { parent: undefined, rule: undefined, next: new Map() };
    const at = new Map<number, Step>();
    for (const rule of this.rules) {
      if (rule.identities === '*') continue;
      for (const identity of rule.identities) {
        const from = at.get(identity) ?? root;
        let step = from.next.get(rule);
        if (!step) from.next.set(rule, (step = { parent: from, rule, next: new Map() }));
        at.set(identity, step);
      }
    }
    const members = new Map<Step, number[]>();
    for (const [identity, step] of at) {
      const list = members.get(step);
      if (list) list.push(identity);
      else members.set(step, [identity]);
    }
    for (const [step, identities] of members) {
      const rules: MapRule<V>[] = [];
      for (let s: Step | undefined = step; s?.rule; s = s.parent) rules.push(s.rule);
      rules.reverse();
      const cls = this.classFor(
        this.hashOf(rules),
        () => rules,
        () => classEntries(rules, this.wildcard, this.recordRefused),
      );
      cls.size += identities.length;
      for (const identity of identities) this.classOf.set(identity, cls);
    }
  }

  /**
   * The class of a rule set (its hash; `list` gives the rules in priority order), computed
   * (`compute`) when no identity has that set yet.
   */
  private classFor(
    hashes: RuleSetHash,
    list: () => MapRule<V>[],
    compute: (rules: readonly MapRule<V>[]) => { entries: Entries<V>; refused: RefusedKey[] },
  ): IdentityClass<V> {
    const signature = ruleSetKey(hashes);
    const known = this.classes.get(signature);
    if (known) return known;
    const rules = list();
    const cls: IdentityClass<V> = {
      signature,
      hashes,
      rules,
      ...compute(rules),
      size: 0,
      groupTransaction: -1,
      groupRoot: -1,
    };
    this.classes.set(signature, cls);
    return cls;
  }

  private serialOf(label: string): number {
    let serial = this.serials.get(label);
    if (serial === undefined) this.serials.set(label, (serial = this.serials.size));
    return serial;
  }

  private hashOf(rules: readonly MapRule<V>[]): RuleSetHash {
    return withRules(
      EMPTY_SET_HASH,
      rules.map((r) => this.serialOf(r.label)),
    );
  }

  /**
   * Moves identities to the classes of their new rule lists: a list loses the rules named in
   * `removed` and gains those of `added` that select the identity. The identities `added`
   * selects and those in `touched` are grouped by class and by which added rules select them
   * (TransactionGroups); each group's class is found or computed once (`keyByKey`: by inserting
   * the added rules into the old class's entries — only when nothing is removed and no refusal
   * is recorded), and its changes are handed to every member.
   */
  private regroup(
    touched: Iterable<number>,
    added: readonly MapRule<V>[],
    removed: ReadonlySet<string>,
    keyByKey: boolean,
    changes: MapChange<V>[],
  ): void {
    // Rules of one policy rule (one per protocol) share their identity set: one step per set.
    const sets: ReadonlySet<number>[] = [];
    const rulesOfSet: number[][] = [];
    const setIndex = new Map<ReadonlySet<number>, number>();
    added.forEach(({ identities }, i) => {
      if (identities === '*') return;
      let set = setIndex.get(identities);
      if (set === undefined) {
        setIndex.set(identities, (set = sets.length));
        sets.push(identities);
        rulesOfSet.push([]);
      }
      (rulesOfSet[set] as number[]).push(i);
    });
    const groups = this.grouping;
    groups.begin();
    try {
      for (let i = 0; i < sets.length; i++) groups.addSet(i, sets[i] as ReadonlySet<number>);
      for (const identity of touched) groups.touch(identity);
      // One per group, in order (a packed array: it is read once per identity).
      const moves: (Move<V> | undefined)[] = [];
      for (let group = 0; group < groups.count; group++) {
        const size = groups.size[group] as number;
        if (size === 0) {
          moves.push(undefined);
          continue;
        }
        // The added rules selecting the group, in the transaction's order (as the lists place
        // rules of equal priority).
        const joined = groups
          .setsOf(group)
          .flatMap((set) => rulesOfSet[set] as number[])
          .sort((a, b) => a - b)
          .map((i) => added[i] as MapRule<V>);
        moves.push(this.moveGroup(groups.classOf[group], size, joined, removed, keyByKey));
      }
      this.handOut(groups.reached, groups, moves, changes);
      for (const move of moves) {
        const from = move?.from;
        if (from && from.size === 0 && this.classes.get(from.signature) === from)
          this.classes.delete(from.signature);
      }
    } finally {
      groups.release();
    }
  }

  /**
   * Each reached identity gets its group's changes and, when the group moved, its new class. A
   * loop of its own, with nothing per identity but array reads and the changes: it runs 76,000
   * times in the ×1 benchmark's insertion, the first time before it is optimized.
   */
  private handOut(
    reached: readonly number[],
    groups: TransactionGroups<IdentityClass<V>>,
    moves: readonly (Move<V> | undefined)[],
    changes: MapChange<V>[],
  ): void {
    for (let i = 0; i < reached.length; i++) {
      const identity = reached[i] as number;
      const move = moves[groups.leave(identity)];
      if (move === undefined) continue;
      const { changed } = move;
      for (let c = 0; c < changed.length; c++) {
        const { op, entry } = changed[c] as MapChange<V>;
        changes.push({ op, entry: withIdentity(entry, identity) });
      }
      if (!move.moves) continue;
      if (move.to) this.classOf.set(identity, move.to);
      else this.classOf.delete(identity);
    }
  }

  /**
   * Where a group of `size` identities of class `from` goes when it loses the `removed` rules and
   * gains `joined`: its class (found, computed, or `from` changed in place) and its changes.
   * Class sizes are updated here; the index of each member is the caller's to update (when
   * `moves`). Undefined when the group stays where it is.
   */
  private moveGroup(
    from: IdentityClass<V> | undefined,
    size: number,
    joined: readonly MapRule<V>[],
    removed: ReadonlySet<string>,
    keyByKey: boolean,
  ): Move<V> | undefined {
    const listOf = () => {
      const before = from?.rules ?? [];
      const rules = removed.size === 0 ? before.slice() : before.filter((r) => !removed.has(r.label));
      for (const rule of joined) insertRuleByPriority(rules, rule);
      return rules;
    };
    // Nothing removed: the new set's hash comes from the old one and the joined rules alone,
    // and the list is built only for a set no identity had.
    const list = removed.size === 0 ? undefined : listOf();
    const hashes = list
      ? this.hashOf(list)
      : withRules(
          from?.hashes ?? EMPTY_SET_HASH,
          joined.map((r) => this.serialOf(r.label)),
        );
    const computeEntries = (rules: readonly MapRule<V>[]) => {
      if (!keyByKey) return classEntries(rules, this.wildcard, this.recordRefused);
      const entries = new Map(from?.entries ?? NO_ENTRIES);
      insertKeys(entries, joined, this.wildcard);
      return { entries, refused: [] };
    };
    const signature = ruleSetKey(hashes);
    if (from && hashes.length > 0 && size === from.size && !this.classes.has(signature)) {
      // The whole class moves to a set no identity has: it becomes that class in place, and
      // its members stay where they are.
      const rules = list ?? listOf();
      const before = from.entries;
      const { entries, refused } = computeEntries(rules);
      this.classes.delete(from.signature);
      from.signature = signature;
      from.hashes = hashes;
      from.rules = rules;
      from.entries = entries;
      from.refused = refused;
      this.classes.set(signature, from);
      const changed = diff(before, entries);
      // Most groups of an insertion: nothing to hand their members.
      return changed.length === 0 ? undefined : { from: undefined, to: from, changed, moves: false };
    }
    const to =
      hashes.length === 0 ? undefined : this.classFor(hashes, () => list ?? listOf(), computeEntries);
    if (to === from) return undefined;
    if (from) from.size -= size;
    if (to) to.size += size;
    return { from, to, changed: diff(from?.entries ?? NO_ENTRIES, to?.entries ?? NO_ENTRIES), moves: true };
  }

  /** After the wildcard layer changed: classes with rules on those protocols, from their rules again. */
  private recomputeClasses(protocols: ReadonlySet<number>, changes: MapChange<V>[]): void {
    const changedOf = new Map<IdentityClass<V>, MapChange<V>[]>();
    for (const cls of this.classes.values()) {
      if (!cls.rules.some((r) => protocols.has(r.protocol))) continue;
      const fresh = classEntries(cls.rules, this.wildcard, this.recordRefused);
      const changed = diff(cls.entries, fresh.entries);
      cls.entries = fresh.entries;
      cls.refused = fresh.refused;
      if (changed.length > 0) changedOf.set(cls, changed);
    }
    // Classes keep a count, not their members: one pass over the index finds them.
    if (changedOf.size === 0) return;
    this.classOf.forEach((identity, cls) => {
      const changed = changedOf.get(cls);
      if (changed)
        for (const { op, entry } of changed) changes.push({ op, entry: withIdentity(entry, identity) });
    });
  }
}
