/**
 * A growable Int32Array that hands out runs of ints at its end and is compacted by its owner:
 * when a run does not fit and at least half of what was handed out is garbage, the owner moves
 * its live runs into a fresh array (and updates whatever points at them); otherwise the array
 * doubles. Packed tables and address records' group lists both live in one.
 */
export class IntArena {
  data: Int32Array;
  private used = 0;
  private garbage = 0;
  /** Times the owner compacted it (for tests and figures). */
  compactions = 0;

  /**
   * `compact` copies the owner's live runs into `into` from index 0, updates the owner's
   * pointers, and returns how many ints it wrote.
   */
  constructor(
    size: number,
    private readonly compact: (into: Int32Array) => number,
  ) {
    this.data = new Int32Array(size);
  }

  /** Where a new run of `length` ints starts. */
  allocate(length: number): number {
    if (this.used + length > this.data.length) {
      if (this.garbage * 2 >= this.used) {
        const next = new Int32Array(this.data.length);
        this.used = this.compact(next);
        this.data = next;
        this.garbage = 0;
        this.compactions++;
      }
      if (this.used + length > this.data.length) {
        const grown = new Int32Array(Math.max(this.data.length * 2, this.used + length));
        grown.set(this.data.subarray(0, this.used));
        this.data = grown;
      }
    }
    const at = this.used;
    this.used += length;
    return at;
  }

  /** A run of `length` ints is no longer used. */
  free(length: number): void {
    this.garbage += length;
  }
}
