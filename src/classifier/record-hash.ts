/**
 * The IPv4 address records (record-layout.ts): an open-addressing hash whose slots are the
 * records' hot halves, with the cold halves at the same bases in a second array, so finding
 * an address is reading its hot half, not a slot and then a record elsewhere.
 *
 * Filled to between a half and three quarters (any number of slots, not a power of two): with
 * 100,000 pods the hot halves take 4.8 MiB, where whole 64-byte records in a power-of-two table
 * took 16 MiB — past what this host's TLB and caches hold, so every record read was a page walk
 * and a DRAM miss (docs/BENCHMARKS.md, tiers). Robin Hood order keeps an absent address (an
 * outside one) as cheap to look up at that fill as a present one: along a probe chain no record
 * sits nearer its home slot than the key would, so the search stops at the first that does.
 * Removal shifts the chain after the slot back (no tombstones). Records move when others are
 * added or removed: a base is good until the next change.
 */
import { clearRecord, EMPTY, KEY, STATE, STATE_MASK, STRIDE, USED } from './record-layout.ts';

/** The hash grows past this fill, to twice its live records. */
const MAX_FILL = 0.75;

export class V4RecordHash {
  /** The hot halves (slots × STRIDE ints) and the cold halves at the same bases. */
  hot: Int32Array;
  cold: Int32Array;
  private slots: number;
  /** Live records. */
  live = 0;
  /** A record (hot then cold half) moving along its chain while another takes its slot, and a spare. */
  private carried = new Int32Array(2 * STRIDE);
  private spare = new Int32Array(2 * STRIDE);

  constructor(slots: number) {
    this.slots = Math.max(2, slots);
    this.hot = new Int32Array(STRIDE * this.slots);
    this.cold = new Int32Array(STRIDE * this.slots);
  }

  /** Slots, live or empty. */
  get size(): number {
    return this.slots;
  }

  /** The base of the record of `key` (an IPv4 address as a signed int), or -1. */
  find(key: number): number {
    const hot = this.hot;
    const slots = this.slots;
    let slot = slotOf(key, slots);
    for (let distance = 0; ; distance++) {
      const base = slot * STRIDE;
      if (((hot[base] as number) & STATE_MASK) === EMPTY) return -1;
      const stored = hot[base + KEY] as number;
      if (stored === key) return base;
      if (displacement(stored, slot, slots) < distance) return -1;
      slot = slot + 1 === slots ? 0 : slot + 1;
    }
  }

  /** Adds an empty record for `key` (absent); returns its base. */
  insert(key: number): number {
    if (this.live + 1 > MAX_FILL * this.slots) this.rehash(2 * (this.live + 1));
    const carried = this.carried;
    clearRecord(carried, carried, 0);
    carried.fill(0, STRIDE);
    carried[STATE] = USED;
    carried[KEY] = key;
    this.live++;
    return this.place(carried);
  }

  /** Empties the slot at `base`: the records after it in its chain move one slot back. */
  remove(base: number): void {
    const { hot, cold, slots } = this;
    let slot = base / STRIDE;
    for (;;) {
      const next = slot + 1 === slots ? 0 : slot + 1;
      const from = next * STRIDE;
      const to = slot * STRIDE;
      if (
        ((hot[from] as number) & STATE_MASK) === EMPTY ||
        displacement(hot[from + KEY] as number, next, slots) === 0
      ) {
        hot.fill(0, to, to + STRIDE);
        cold.fill(0, to, to + STRIDE);
        break;
      }
      hot.copyWithin(to, from, from + STRIDE);
      cold.copyWithin(to, from, from + STRIDE);
      slot = next;
    }
    this.live--;
  }

  /** Calls `visit` with the base of every live record (records must not be added or removed). */
  forEach(visit: (base: number) => void): void {
    const hot = this.hot;
    for (let base = 0; base < hot.length; base += STRIDE)
      if (((hot[base] as number) & STATE_MASK) === USED) visit(base);
  }

  /**
   * Puts a record (hot half then cold half in `record`, which it overwrites) into the hash;
   * returns its base. Robin Hood: a record farther from its home slot than the one in a slot
   * takes that slot, and the one it displaces goes on.
   */
  private place(record: Int32Array): number {
    const { hot, cold, slots } = this;
    let slot = slotOf(record[KEY] as number, slots);
    let placed = -1;
    let carried = record;
    for (let distance = 0; ; distance++, slot = slot + 1 === slots ? 0 : slot + 1) {
      const base = slot * STRIDE;
      if (((hot[base] as number) & STATE_MASK) === EMPTY) {
        hot.set(carried.subarray(0, STRIDE), base);
        cold.set(carried.subarray(STRIDE), base);
        return placed < 0 ? base : placed;
      }
      const resident = displacement(hot[base + KEY] as number, slot, slots);
      if (resident >= distance) continue;
      const spare = carried === this.spare ? this.carried : this.spare;
      spare.set(hot.subarray(base, base + STRIDE));
      spare.set(cold.subarray(base, base + STRIDE), STRIDE);
      hot.set(carried.subarray(0, STRIDE), base);
      cold.set(carried.subarray(STRIDE), base);
      if (placed < 0) placed = base;
      carried = spare;
      distance = resident;
    }
  }

  /** A table of `size` slots holding the live records. */
  private rehash(size: number): void {
    const old = this.hot;
    const oldCold = this.cold;
    this.hot = new Int32Array(STRIDE * size);
    this.cold = new Int32Array(STRIDE * size);
    this.slots = size;
    const record = this.carried;
    for (let base = 0; base < old.length; base += STRIDE) {
      if (((old[base] as number) & STATE_MASK) !== USED) continue;
      record.set(old.subarray(base, base + STRIDE));
      record.set(oldCold.subarray(base, base + STRIDE), STRIDE);
      this.place(record);
    }
  }
}

/** How far the record of `key` in `slot` is from its home slot. */
function displacement(key: number, slot: number, slots: number): number {
  const away = slot - slotOf(key, slots);
  return away < 0 ? away + slots : away;
}

/**
 * Fibonacci hashing scaled to the table's size: the product's top 21 bits times the size, over
 * 2^21 (exact in a double; consecutive pod addresses spread over every slot).
 */
function slotOf(key: number, slots: number): number {
  return ((Math.imul(key, 0x9e3779b1) >>> 11) * slots * (1 / 2097152)) | 0;
}
