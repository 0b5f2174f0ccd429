/**
 * A map that holds its first entry inline and makes a Map only for a second key: memos where
 * nearly every owner sees one key (a rule's one variant, a peer's plain group spec) held a Map
 * per owner, megabytes of tables in a compile of 10,000 policies.
 */
export class FirstAndMore<K, V> {
  #more: Map<K, V> | undefined;

  constructor(
    private readonly firstKey: K,
    private readonly firstValue: V,
  ) {}

  get(key: K): V | undefined {
    return key === this.firstKey ? this.firstValue : this.#more?.get(key);
  }

  /** Adds a key other than the first (the first is fixed when made). */
  set(key: K, value: V): void {
    if (key === this.firstKey) throw new Error('FirstAndMore: the first entry is fixed');
    (this.#more ??= new Map<K, V>()).set(key, value);
  }
}
