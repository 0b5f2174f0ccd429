/**
 * Per-identity storage for the MapState: the class of every identity, and small integers an
 * insertion keeps per identity while it runs. A lookup per selected identity is the insertion's
 * main cost at 100,000 identities, and an array index is a fraction of a hash probe into a Map
 * that size; so identities that are small non-negative integers (pod indexes, Cilium's numeric
 * identities) are kept in arrays, the rest in Maps.
 */
import { objectArray } from './map-entries.ts';

/** Identities below this are kept in an array. */
const DENSE_LIMIT = 1 << 24;

function isDense(identity: number): boolean {
  return identity >= 0 && identity < DENSE_LIMIT && Number.isInteger(identity);
}

/** Values by identity: an array for small non-negative integers, a Map for the rest. */
export class IdentityIndex<T> {
  private readonly dense: (T | undefined)[] = objectArray();
  private readonly sparse = new Map<number, T>();

  get(identity: number): T | undefined {
    return isDense(identity) ? this.dense[identity] : this.sparse.get(identity);
  }

  set(identity: number, value: T): void {
    if (!isDense(identity)) this.sparse.set(identity, value);
    else {
      // Grown in order, so the array stays packed rather than turning into a dictionary.
      while (this.dense.length < identity) this.dense.push(undefined);
      this.dense[identity] = value;
    }
  }

  delete(identity: number): void {
    if (isDense(identity)) {
      if (identity < this.dense.length) this.dense[identity] = undefined;
    } else this.sparse.delete(identity);
  }

  /** Every identity with a value (dense ones in increasing order, then the rest). */
  forEach(visit: (identity: number, value: T) => void): void {
    const { dense } = this;
    for (let identity = 0; identity < dense.length; identity++) {
      const value = dense[identity];
      if (value !== undefined) visit(identity, value);
    }
    for (const [identity, value] of this.sparse) visit(identity, value);
  }
}

/**
 * A non-negative integer per identity (0 when unset) for the length of one insertion: an
 * Int32Array for dense identities, kept between insertions and zeroed only where it was set
 * (`clear`), so an insertion costs what it touches, not the number of identities.
 */
export class IdentityMarks {
  private dense = new Int32Array(0);
  private readonly sparse = new Map<number, number>();

  get(identity: number): number {
    // The common case first, in as few steps as possible: this runs once per selected identity
    // and set, often before the optimizing compiler has reached it.
    if (identity < this.dense.length && identity >= 0 && (identity | 0) === identity)
      return this.dense[identity] as number;
    return isDense(identity) ? 0 : (this.sparse.get(identity) ?? 0);
  }

  set(identity: number, mark: number): void {
    if (identity < this.dense.length && identity >= 0 && (identity | 0) === identity)
      this.dense[identity] = mark;
    else if (!isDense(identity)) this.sparse.set(identity, mark);
    else {
      this.grow(identity);
      this.dense[identity] = mark;
    }
  }

  /** An identity's mark, unset. */
  take(identity: number): number {
    if (identity < this.dense.length && identity >= 0 && (identity | 0) === identity) {
      const mark = this.dense[identity] as number;
      this.dense[identity] = 0;
      return mark;
    }
    const mark = this.sparse.get(identity) ?? 0;
    this.sparse.delete(identity);
    return mark;
  }

  /** Unsets the marks of these identities (every identity that was set). */
  clear(identities: readonly number[]): void {
    const { dense } = this;
    for (let i = 0; i < identities.length; i++) {
      const identity = identities[i] as number;
      if (identity < dense.length && identity >= 0 && (identity | 0) === identity) dense[identity] = 0;
    }
    this.sparse.clear();
  }

  private grow(identity: number): void {
    const grown = new Int32Array(Math.min(DENSE_LIMIT, Math.max(identity + 1, this.dense.length * 2)));
    grown.set(this.dense);
    this.dense = grown;
  }
}
