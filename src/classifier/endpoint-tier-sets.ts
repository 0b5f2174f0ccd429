/**
 * The cluster-policy tier tables of endpoints, one entry per distinct set: endpoints selected by
 * the same cluster policies share an entry (reference counted), so the few entries stay in cache
 * where one per endpoint cost a cache miss per tier lookup. An entry is TIER_FIELDS ints: the
 * four tables' block offsets (-1 when absent), then each table's form number for tier decisions
 * (tier-decisions.ts) TIER_FORM after it.
 */

/** Fields of an entry: the Admin and Baseline tables (block offsets), per direction. */
export const ADMIN_INGRESS = 0;
export const ADMIN_EGRESS = 1;
export const BASELINE_INGRESS = 2;
export const BASELINE_EGRESS = 3;
/** Each table's form number for tier decisions (tier-decisions.ts) is this far after its offset. */
export const TIER_FORM = 4;
export const TIER_TABLES = 4;
export const TIER_FIELDS = 8;

export class TierEntries {
  /** The entries, TIER_FIELDS ints each (grows by doubling: read it anew after an acquire). */
  data = new Int32Array(TIER_FIELDS * 64);
  private count = 0;
  private readonly free: number[] = [];
  /** Entries by their fields (`a,b,…`), and the records using each (by entry). */
  private entryOf = new Map<string, number>();
  private readonly users = new Map<number, number>();

  /** The entry holding these TIER_FIELDS fields, made when new; one more record uses it. */
  acquire(fields: readonly number[]): number {
    const key = fields.join(',');
    let entry = this.entryOf.get(key);
    if (entry === undefined) {
      entry = this.free.pop() ?? this.count++ * TIER_FIELDS;
      if (entry + TIER_FIELDS > this.data.length) {
        const grown = new Int32Array(this.data.length * 2);
        grown.set(this.data);
        this.data = grown;
      }
      this.data.set(fields, entry);
      this.entryOf.set(key, entry);
    }
    this.users.set(entry, (this.users.get(entry) ?? 0) + 1);
    return entry;
  }

  /** One record fewer uses the entry; the last one frees it. */
  release(entry: number): void {
    const users = (this.users.get(entry) ?? 1) - 1;
    if (users > 0) {
      this.users.set(entry, users);
      return;
    }
    this.users.delete(entry);
    this.entryOf.delete(this.keyOf(entry));
    this.free.push(entry);
  }

  /** The four tables of an entry. */
  tables(entry: number): number[] {
    return [...this.data.subarray(entry, entry + TIER_TABLES)];
  }

  /**
   * Table blocks moved: each live entry's tables follow (`remap` rewrites one field), once per
   * entry however many records share it, and the entry is found again by its new tables.
   */
  remapTables(remap: (data: Int32Array, at: number) => void): void {
    this.entryOf = new Map();
    for (const entry of this.users.keys()) {
      for (let i = 0; i < TIER_TABLES; i++) remap(this.data, entry + i);
      this.entryOf.set(this.keyOf(entry), entry);
    }
  }

  private keyOf(entry: number): string {
    return this.data.subarray(entry, entry + TIER_FIELDS).join(',');
  }
}
