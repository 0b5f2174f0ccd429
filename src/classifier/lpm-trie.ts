/**
 * A longest-prefix-match trie over IPv4 or IPv6 addresses, in typed arrays: a binary trie with
 * one node per prefix bit, children and values as integer indexes, no allocation per lookup.
 * Values are bitmaps (see `bitmaps.ts`) stored once per prefix; a lookup collects the bitmaps
 * of every prefix on the address's path, so a rule matches through any covering prefix — what
 * the seed's BPF LPM map gives after merging covering entries.
 */
import type { IpFamily } from '../net/ip.ts';

const NONE = -1;

export class LpmTrie {
  private children: Int32Array;
  /** Per node: the value (bitmap offset) stored at that prefix, or NONE. */
  private values: Int32Array;
  private nodes = 1;
  readonly bits: number;

  constructor(
    readonly family: IpFamily,
    initialNodes = 64,
  ) {
    this.bits = family === 4 ? 32 : 128;
    this.children = new Int32Array(initialNodes * 2).fill(NONE);
    this.values = new Int32Array(initialNodes).fill(NONE);
  }

  get size(): number {
    return this.nodes;
  }

  /** Prefixes stored (a /0 lives at the root, so node count alone does not tell). */
  stored = 0;

  /** The value slot of a prefix, created when missing. */
  slot(base: bigint, prefix: number, allocate: () => number): number {
    let node = 0;
    for (let i = 0; i < prefix; i++) {
      const bit = Number((base >> BigInt(this.bits - 1 - i)) & 1n);
      let child = this.children[node * 2 + bit] as number;
      if (child === NONE) {
        child = this.newNode();
        this.children[node * 2 + bit] = child;
      }
      node = child;
    }
    let value = this.values[node] as number;
    if (value === NONE) {
      value = allocate();
      this.values[node] = value;
      this.stored++;
    }
    return value;
  }

  /**
   * Appends to `out` (from index `n`) the value of every stored prefix that contains the
   * address (an IPv4 address as one word, IPv6 as four, most significant first), shortest
   * first; returns the new count. `out` must have room for bits + 1 more values.
   */
  collect(words: Uint32Array, out: Int32Array, n: number): number {
    let node = 0;
    for (let i = 0; ; i++) {
      const value = this.values[node] as number;
      if (value !== NONE) out[n++] = value;
      if (i === this.bits) return n;
      const word = words[i >>> 5] as number;
      const bit = (word >>> (31 - (i & 31))) & 1;
      const child = this.children[node * 2 + bit] as number;
      if (child === NONE) return n;
      node = child;
    }
  }

  private newNode(): number {
    if (this.nodes === this.values.length) {
      const children = new Int32Array(this.children.length * 2).fill(NONE);
      children.set(this.children);
      this.children = children;
      const values = new Int32Array(this.values.length * 2).fill(NONE);
      values.set(this.values);
      this.values = values;
    }
    return this.nodes++;
  }
}

/** An address as 32-bit words (1 for IPv4, 4 for IPv6), into a reusable buffer. */
export function addressWords(family: IpFamily, value: bigint, out: Uint32Array): Uint32Array {
  if (family === 4) {
    out[0] = Number(value);
    return out;
  }
  for (let i = 0; i < 4; i++) out[i] = Number((value >> BigInt(96 - 32 * i)) & 0xffffffffn);
  return out;
}
