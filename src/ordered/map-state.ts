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
  IdentityIndex,
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
  withIdentity,
} from './map-entries.ts';
import { PORT_BITS, keyNumber, prefixOf } from './port-prefix.ts';
import type { MapChange, MapEntry, MapRule, RefusedKey } from './types.ts';
import { WildcardLayer } from './wildcard-layer.ts';

const NO_ENTRIES: Entries<never> = new Map();
/** Past this many rules in one transaction, which of them select an identity is a string, not a bit mask. */
const MASK_BITS = 30;

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
    for (const { members, entries } of this.classes.values())
      for (const identity of members)
        for (const entry of entries.values()) all.push(withIdentity(entry, identity));
    return all.sort(compareKeys);
  }

  /** Keys refused because a higher-priority entry covers them (with `recordRefused`). */
  refusedKeys(): RefusedKey[] {
    const all = [...this.wildcard.refused];
    for (const { members, refused } of this.classes.values())
      for (const identity of members) for (const key of refused) all.push({ ...key, identity });
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
    const changes: MapChange<V>[] = [];
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
      for (const identity of identities) {
        cls.members.add(identity);
        this.classOf.set(identity, cls);
      }
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
    const cls: IdentityClass<V> = { signature, hashes, rules, ...compute(rules), members: new Set() };
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
   * selects and those in `touched` are grouped by class and by which added rules select them;
   * each group's class is found or computed once (`keyByKey`: by inserting the added rules into
   * the old class's entries — only when nothing is removed and no refusal is recorded), and its
   * changes are handed to every member.
   */
  private regroup(
    touched: Iterable<number>,
    added: readonly MapRule<V>[],
    removed: ReadonlySet<string>,
    keyByKey: boolean,
    changes: MapChange<V>[],
  ): void {
    const wide = added.length > MASK_BITS;
    // Rules of one policy rule (one per protocol) share their identity set: one pass per set.
    const bySet = new Map<ReadonlySet<number>, number | string>();
    added.forEach(({ identities }, i) => {
      if (identities === '*') return;
      const bits = bySet.get(identities);
      bySet.set(
        identities,
        wide ? `${(bits as string | undefined) ?? ''}${i},` : (bits as number) | 0 | (1 << i),
      );
    });
    const selection = new Map<number, number | string>();
    for (const [identities, bits] of bySet) {
      for (const identity of identities) {
        const was = selection.get(identity);
        selection.set(
          identity,
          was === undefined
            ? bits
            : wide
              ? `${was as string}${bits as string}`
              : (was as number) | (bits as number),
        );
      }
    }
    for (const identity of touched) if (!selection.has(identity)) selection.set(identity, wide ? '' : 0);
    const groups = new Map<IdentityClass<V> | undefined, Map<number | string, number[]>>();
    for (const [identity, key] of selection) {
      const from = this.classOf.get(identity);
      let byKey = groups.get(from);
      if (!byKey) groups.set(from, (byKey = new Map<number | string, number[]>()));
      const members = byKey.get(key);
      if (members) members.push(identity);
      else byKey.set(key, [identity]);
    }
    const left = new Set<IdentityClass<V>>();
    for (const [from, byKey] of groups) {
      for (const [key, members] of byKey) {
        const joined = added.filter((_, i) =>
          wide ? (key as string).split(',').includes(String(i)) : ((key as number) >>> i) & 1,
        );
        const listOf = () => {
          const rules = (from?.rules ?? []).filter((r) => !removed.has(r.label));
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
        if (
          from &&
          hashes.length > 0 &&
          members.length === from.members.size &&
          !this.classes.has(signature)
        ) {
          // The whole class moves to a set no identity has: it becomes that class in place, and
          // its members stay where they are.
          const rules = list ?? listOf();
          const before = from.entries;
          this.classes.delete(from.signature);
          Object.assign(from, { signature, hashes, rules, ...computeEntries(rules) });
          this.classes.set(signature, from);
          const changed = diff(before, from.entries);
          for (const identity of members)
            for (const { op, entry } of changed) changes.push({ op, entry: withIdentity(entry, identity) });
          continue;
        }
        const to =
          hashes.length === 0 ? undefined : this.classFor(hashes, () => list ?? listOf(), computeEntries);
        if (to === from) continue;
        const changed = diff(from?.entries ?? NO_ENTRIES, to?.entries ?? NO_ENTRIES);
        for (const identity of members) {
          for (const { op, entry } of changed) changes.push({ op, entry: withIdentity(entry, identity) });
          from?.members.delete(identity);
          if (to) {
            to.members.add(identity);
            this.classOf.set(identity, to);
          } else this.classOf.delete(identity);
        }
        if (from) left.add(from);
      }
    }
    for (const cls of left)
      if (cls.members.size === 0 && this.classes.get(cls.signature) === cls)
        this.classes.delete(cls.signature);
  }

  /** After the wildcard layer changed: classes with rules on those protocols, from their rules again. */
  private recomputeClasses(protocols: ReadonlySet<number>, changes: MapChange<V>[]): void {
    for (const cls of this.classes.values()) {
      if (!cls.rules.some((r) => protocols.has(r.protocol))) continue;
      const fresh = classEntries(cls.rules, this.wildcard, this.recordRefused);
      const changed = diff(cls.entries, fresh.entries);
      cls.entries = fresh.entries;
      cls.refused = fresh.refused;
      for (const identity of cls.members)
        for (const { op, entry } of changed) changes.push({ op, entry: withIdentity(entry, identity) });
    }
  }
}
