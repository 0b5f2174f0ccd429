/**
 * A hash of a list of objects by their serial numbers, for interning lists found again by it and
 * confirmed item by item (the store's tier selections, the configurator's tables).
 */
export function serialListHash<T>(items: readonly T[], numbering: SerialNumbering<T>): number {
  let hash = items.length;
  for (const item of items) hash = (Math.imul(hash, 0x01000193) ^ numbering.serialOf(item)) | 0;
  // Kept in the small-integer range: a Map key outside it is a heap number, made and hashed anew
  // for every lookup.
  return hash & 0x3fffffff;
}

/**
 * Where items' serial numbers come from: an object with a method, not a function value — compiled
 * code inlines the function it was given, and a closure made per owner (a store's numbering) was
 * thrown away with its owner, so every new owner paid for optimizing the hash again.
 */
export interface SerialNumbering<T> {
  serialOf(item: T): number;
}

/**
 * Interned items by the hash of their list (`serialListHash`): one item per hash, an array where
 * hashes collide. `find` confirms a candidate with `same`, given once (no closure per lookup).
 */
export class HashBuckets<T extends object, L> {
  readonly #buckets = new Map<number, T | T[]>();

  constructor(private readonly same: (item: T, list: L) => boolean) {}

  find(hash: number, list: L): T | undefined {
    const known = this.#buckets.get(hash);
    if (known === undefined) return undefined;
    if (!Array.isArray(known)) return this.same(known, list) ? known : undefined;
    for (const item of known) if (this.same(item, list)) return item;
    return undefined;
  }

  add(hash: number, item: T): void {
    const there = this.#buckets.get(hash);
    if (there === undefined) this.#buckets.set(hash, item);
    else if (Array.isArray(there)) there.push(item);
    else this.#buckets.set(hash, [there, item]);
  }

  clear(): void {
    this.#buckets.clear();
  }
}
