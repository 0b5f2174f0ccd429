/**
 * Tables shared by the pods that would build equal ones, found by two keys: the store's
 * selection key (the exact policy objects) and a short variant (ports, tier and direction).
 *
 * The two keys are never concatenated. A selection key names every selecting policy — about
 * 10,000 tokens (200 KB) in a cluster where every policy selects every pod — and is the same
 * string object for every pod of a label set, so V8 hashes it once and caches the hash in the
 * string. A concatenation is a new string per pod that must be flattened and hashed whole:
 * with one per pod that was 75 % of `matrix --engine compiled` on such a cluster.
 */

/** Packed handle of a key that has no table (the pod is not isolated in that direction). */
export const NO_TABLE = -1;

/** A table shared by content (with its packed handle), with the pods using it. */
export interface Shared<T> {
  readonly table: T | undefined;
  readonly handle: number;
  readonly users: Set<string>;
}

/** Where a pod's shared table is: its selection key and variant. */
export interface SharedRef {
  readonly key: string;
  readonly variant: string;
}

export class SharedTables<T> {
  private readonly byKey = new Map<string, Map<string, Shared<T>>>();

  /** The entry for (key, variant), built and packed on first use; `user` is recorded as a user. */
  acquire(ref: SharedRef, user: string, build: () => T | undefined, pack: (table: T) => number): Shared<T> {
    let variants = this.byKey.get(ref.key);
    if (!variants) this.byKey.set(ref.key, (variants = new Map<string, Shared<T>>()));
    let entry = variants.get(ref.variant);
    if (!entry) {
      const table = build();
      entry = { table, handle: table === undefined ? NO_TABLE : pack(table), users: new Set() };
      variants.set(ref.variant, entry);
    }
    entry.users.add(user);
    return entry;
  }

  /** Drops `user`; the entry goes with its last user, and its packed handle is given to `free`. */
  release(ref: SharedRef, user: string, free: (handle: number) => void): void {
    const variants = this.byKey.get(ref.key);
    const entry = variants?.get(ref.variant);
    if (!variants || !entry) return;
    entry.users.delete(user);
    if (entry.users.size > 0) return;
    this.drop(variants, ref, entry, free);
  }

  /**
   * Removes every entry whose table `stale` says is out of date, giving its handle to `free`;
   * returns the users those entries had (they need their tables again).
   */
  evict(stale: (table: T) => boolean, free: (handle: number) => void): Set<string> {
    const users = new Set<string>();
    for (const [key, variants] of this.byKey)
      for (const [variant, entry] of variants) {
        if (entry.table === undefined || !stale(entry.table)) continue;
        for (const user of entry.users) users.add(user);
        this.drop(variants, { key, variant }, entry, free);
      }
    return users;
  }

  /** Distinct tables held (keys with no table not counted). */
  get tables(): number {
    let count = 0;
    for (const variants of this.byKey.values())
      for (const entry of variants.values()) if (entry.table !== undefined) count++;
    return count;
  }

  private drop(
    variants: Map<string, Shared<T>>,
    ref: SharedRef,
    entry: Shared<T>,
    free: (handle: number) => void,
  ): void {
    variants.delete(ref.variant);
    if (variants.size === 0) this.byKey.delete(ref.key);
    if (entry.handle !== NO_TABLE) free(entry.handle);
  }
}
