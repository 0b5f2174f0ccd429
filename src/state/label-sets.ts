/**
 * One entry per distinct label set per namespace, with posting lists (`key=value` → label sets,
 * `key` → label sets), so a selector finds its candidates without scanning every pod. Shared by
 * pods (label sets of pods) and namespaces (each namespace is its own "label set" in partition "").
 */
import type { LabelSelector, Labels } from '../model/types.ts';

export interface LabelSetEntry {
  readonly key: string;
  readonly partition: string;
  readonly labels: Labels;
  /** Ids of the objects carrying exactly these labels. */
  readonly members: Set<string>;
}

/** Label maps are immutable once ingested, so each map's key is computed once. */
const keys = new WeakMap<Labels, string>();

export function labelSetKey(labels: Labels): string {
  let key = keys.get(labels);
  if (key === undefined) {
    const names = Object.keys(labels);
    // Manifests usually list labels in order already: sort only when they are not.
    for (let i = 1; i < names.length; i++) {
      if ((names[i - 1] as string) > (names[i] as string)) {
        names.sort();
        break;
      }
    }
    // Joined (a flat string), not concatenated piece by piece (a chain of cons-strings kept in
    // every entry).
    key = names.map((k) => `${k}=${labels[k]}`).join('\u0000');
    keys.set(labels, key);
  }
  return key;
}

export class LabelSetIndex {
  private readonly sets = new Map<string, Map<string, LabelSetEntry>>();
  private readonly byValue = new Map<string, Map<string, Set<LabelSetEntry>>>();
  private readonly byKey = new Map<string, Map<string, Set<LabelSetEntry>>>();

  /** Adds a member; returns its entry and whether the entry is new. */
  add(partition: string, labels: Labels, member: string): { entry: LabelSetEntry; created: boolean } {
    const key = labelSetKey(labels);
    let sets = this.sets.get(partition);
    if (!sets) this.sets.set(partition, (sets = new Map<string, LabelSetEntry>()));
    let entry = sets.get(key);
    const created = !entry;
    if (!entry) {
      entry = { key, partition, labels, members: new Set() };
      sets.set(key, entry);
      for (const [k, v] of Object.entries(labels)) {
        posting(this.byValue, partition, `${k}=${v}`).add(entry);
        posting(this.byKey, partition, k).add(entry);
      }
    }
    entry.members.add(member);
    return { entry, created };
  }

  /** Removes a member; returns its entry and whether the entry is now gone. */
  remove(partition: string, labels: Labels, member: string): { entry?: LabelSetEntry; deleted: boolean } {
    const key = labelSetKey(labels);
    const sets = this.sets.get(partition);
    const entry = sets?.get(key);
    if (!sets || !entry) return { deleted: false };
    entry.members.delete(member);
    if (entry.members.size > 0) return { entry, deleted: false };
    sets.delete(key);
    for (const [k, v] of Object.entries(labels)) {
      posting(this.byValue, partition, `${k}=${v}`).delete(entry);
      posting(this.byKey, partition, k).delete(entry);
    }
    return { entry, deleted: true };
  }

  entry(partition: string, labels: Labels): LabelSetEntry | undefined {
    return this.sets.get(partition)?.get(labelSetKey(labels));
  }

  all(partition: string): Iterable<LabelSetEntry> {
    return this.sets.get(partition)?.values() ?? [];
  }

  /**
   * Label sets that may match the selector: the smallest posting list of its `In` or `Exists`
   * requirements, or every set when it has neither. Callers still test each candidate.
   */
  candidates(partition: string, selector: LabelSelector): Iterable<LabelSetEntry> {
    const byValue = this.byValue.get(partition);
    const byKey = this.byKey.get(partition);
    let best: Iterable<LabelSetEntry> | undefined;
    let bestSize = Infinity;
    for (const r of selector.requirements) {
      // One posting list (a matchLabels pair, an Exists) is used as it is: no temporaries.
      if (r.operator === 'Exists' || (r.operator === 'In' && r.values.length === 1)) {
        const list = r.operator === 'Exists' ? byKey?.get(r.key) : byValue?.get(`${r.key}=${r.values[0]}`);
        if (!list) return NONE;
        if (list.size < bestSize) {
          bestSize = list.size;
          best = list;
        }
      } else if (r.operator === 'In') {
        const lists = r.values.map((v) => byValue?.get(`${r.key}=${v}`) ?? NONE);
        let size = 0;
        for (const l of lists) size += l.size;
        if (size < bestSize) {
          bestSize = size;
          best = lists.flatMap((l) => [...l]);
        }
      }
    }
    return best ?? this.all(partition);
  }
}

/** The posting list of a label nothing carries. */
const NONE: ReadonlySet<LabelSetEntry> = new Set();

function posting<T>(map: Map<string, Map<string, Set<T>>>, partition: string, key: string): Set<T> {
  let inner = map.get(partition);
  if (!inner) map.set(partition, (inner = new Map<string, Set<T>>()));
  let set = inner.get(key);
  if (!set) inner.set(key, (set = new Set()));
  return set;
}
