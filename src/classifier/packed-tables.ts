/**
 * Direction tables packed for lookups: each built table is copied into one block of a shared
 * Int32Array — header, port entries, group entries, host entries, short IPv4 prefix lists, the
 * tier actions and the bitmaps themselves — so a lookup reads a few consecutive cache lines
 * instead of the builder's maps and objects. Owners hold a handle per table; lookups take the
 * block's offset, and when the arena compacts, `onMove` says where blocks went.
 *
 * A lookup is the seed's: the port map first (a port no rule names settles the packet), then
 * `(prim | (supp & ~except)) & ports`, where prim also takes the bitmaps of the groups the
 * remote address is in. Big prefix maps (more than a few IPv4 prefixes, every IPv6 map) stay
 * in their LPM tries, referenced by index.
 *
 * Bitmaps wider than one word carry a summary in front (one bit per non-zero word), and a
 * lookup first collects the bitmaps that apply, then computes only the words where both the
 * ports' and the peers' summaries have bits: with 1,000 policies on an endpoint (32 words) a
 * lookup still touches one or two words per bitmap, not 32.
 */
import type { IpFamily } from '../net/ip.ts';
import type { DirectionTable } from './direction-table.ts';
import type { LpmTrie } from './lpm-trie.ts';
import { IntArena } from './int-arena.ts';
import { packTable } from './pack-table.ts';
import {
  ACTION_AT,
  ANY,
  BITS,
  FEW_V4,
  findEntry,
  GROUP_AT,
  GROUP_COUNT,
  HAS,
  HAS_GROUPS,
  HAS_HOSTS,
  HAS_PRIM_V4,
  HAS_RANGES,
  HAS_SUPP_V4,
  HAS_V6,
  hashBits,
  HOST_AT,
  HOST_COUNT,
  L3,
  NONE,
  PORT_COUNT,
  portBitOfKey,
  PORTS,
  RANGE_AT,
  RANGE_COUNT,
  SCAN,
  SUMMARY,
  TRIE_V6,
  WIDTH,
} from './packed-layout.ts';

export { portBit } from './packed-layout.ts';

/** Room in the collected lists for everything but the remote's groups (trie paths, short lists, a host). */
const LIST_ROOM = 160;

export class PackedTables {
  private readonly arena = new IntArena(1 << 16, (into) => this.compact(into));
  /** Per handle: block offset and length (-1 when free). */
  private offsets = new Int32Array(1024).fill(NONE);
  private lengths = new Int32Array(1024);
  private handles = 0;
  private readonly freeHandles: number[] = [];
  private readonly tries: (LpmTrie | undefined)[] = [];
  private readonly freeTries: number[] = [];
  /** Per handle, the tries its block references (released with it). */
  private readonly triesOf = new Map<number, number[]>();
  /** The bitmaps a lookup collects (offsets of their first word), shared by all lookups (one thread). */
  private prim = new Int32Array(LIST_ROOM);
  private supp = new Int32Array(LIST_ROOM);
  private except = new Int32Array(LIST_ROOM);
  private ports = new Int32Array(64);
  private readonly trieWords = new Uint32Array(4);
  /** Times the arena was compacted (for tests and figures). */
  get compactions(): number {
    return this.arena.compactions;
  }

  get data(): Int32Array {
    return this.arena.data;
  }

  /** `onMove` is told, after each compaction, where every moved block went (old → new offset). */
  constructor(private readonly onMove: (moves: ReadonlyMap<number, number>) => void = () => {}) {}

  /** Packs a built table (with its tier actions, if any); returns its handle. */
  add(table: DirectionTable, actions?: Uint8Array): number {
    const usedTries: number[] = [];
    const block = packTable(table, actions, (trie) => {
      const index = this.freeTries.pop() ?? this.tries.length;
      this.tries[index] = trie;
      usedTries.push(index);
      return index;
    });
    const handle = this.freeHandles.pop() ?? this.newHandle();
    const at = this.arena.allocate(block.length);
    this.arena.data.set(block, at);
    this.offsets[handle] = at;
    this.lengths[handle] = block.length;
    if (usedTries.length > 0) this.triesOf.set(handle, usedTries);
    return handle;
  }

  remove(handle: number): void {
    this.arena.free(this.lengths[handle] as number);
    this.offsets[handle] = NONE;
    this.lengths[handle] = 0;
    this.freeHandles.push(handle);
    for (const index of this.triesOf.get(handle) ?? []) {
      this.tries[index] = undefined;
      this.freeTries.push(index);
    }
    this.triesOf.delete(handle);
  }

  /**
   * Where a table's block is now. Lookups take the block's offset (records keep offsets, not
   * handles: one load less per lookup); when compaction moves blocks, `onMove` hears of it.
   */
  offsetOf(handle: number): number {
    return this.offsets[handle] as number;
  }

  /**
   * A 32-bit summary of the ports the table at `at` names: the OR of portBit over its port
   * entries, or every bit when an L3, any-port or port-range entry can match any port. A
   * packet whose portBit is not in it matches no rule — decided without reading the block.
   */
  portSignature(at: number): number {
    const data = this.data;
    const has = data[at + HAS] as number;
    if (data[at + L3] !== NONE || has & HAS_RANGES) return -1;
    for (let p = 0; p < 3; p++) if (data[at + ANY + p] !== NONE) return -1;
    const count = data[at + PORT_COUNT] as number;
    const slots = count <= SCAN ? count : 1 << hashBits(count);
    let signature = 0;
    for (let i = 0; i < slots; i++)
      if (data[at + PORTS + 2 * i + 1] !== NONE)
        signature |= portBitOfKey(data[at + PORTS + 2 * i] as number);
    return signature;
  }

  /** The tier action of a slot of a packed tier table (its block at `at`). */
  action(at: number, slot: number): number {
    return this.data[at + (this.data[at + ACTION_AT] as number) + slot] as number;
  }

  /**
   * The lowest matching rule slot of the table whose block is at `b` (or, when `first` is
   * false, any matching slot), -1 for none. `words` is the remote address (1 word for IPv4,
   * 4 for IPv6); its groups are `groups[groupsAt … groupsAt + groupCount)`, sorted.
   */
  match(
    b: number,
    family: IpFamily,
    words: Uint32Array,
    groups: Int32Array,
    groupsAt: number,
    groupCount: number,
    protocol: number,
    port: number,
    first: boolean,
  ): number {
    const data = this.data;
    // Ports first: one short scan, and most denied packets end here.
    let n = 0;
    const l3 = data[b + L3] as number;
    if (l3 !== NONE) this.ports[n++] = b + l3;
    const exact = findEntry(data, b + PORTS, data[b + PORT_COUNT] as number, (protocol << 16) | port);
    if (exact !== NONE) this.ports[n++] = b + exact;
    const any = data[b + ANY + protocol] as number;
    if (any !== NONE) this.ports[n++] = b + any;
    const has = data[b + HAS] as number;
    if (has & HAS_RANGES) {
      const rangeCount = data[b + RANGE_COUNT] as number;
      for (let i = 0, r = b + (data[b + RANGE_AT] as number); i < rangeCount; i++, r += 4) {
        if (data[r] !== protocol || port < (data[r + 1] as number) || port > (data[r + 2] as number))
          continue;
        // Three entries come before the ranges; a table may hold more ranges than the scratch.
        if (n === this.ports.length) this.ports = growInts(this.ports);
        this.ports[n++] = b + (data[r + 3] as number);
      }
    }
    if (n === 0) return -1;
    const ports = this.ports;

    // Then the bitmaps the remote address selects, by offset (no words read yet).
    if (this.prim.length < LIST_ROOM + groupCount) this.prim = new Int32Array(2 * (LIST_ROOM + groupCount));
    const { prim, supp, except } = this;
    let np = 0;
    let ns = 0;
    let ne = 0;
    if (family === 4) {
      const address = (words[0] as number) | 0;
      if (has & HAS_PRIM_V4) np = this.collectV4(data, b, 0, address, prim, 0);
      if (has & HAS_HOSTS) {
        const host = findEntry(
          data,
          b + (data[b + HOST_AT] as number),
          data[b + HOST_COUNT] as number,
          address,
        );
        if (host !== NONE) prim[np++] = b + host;
      }
      if (has & HAS_SUPP_V4) {
        ns = this.collectV4(data, b, 1, address, supp, 0);
        if (ns > 0) ne = this.collectV4(data, b, 2, address, except, 0);
      }
    } else if (has & HAS_V6) {
      np = this.collectTrie(data, b, data[b + TRIE_V6] as number, words, prim, 0);
      ns = this.collectTrie(data, b, data[b + TRIE_V6 + 1] as number, words, supp, 0);
      if (ns > 0) ne = this.collectTrie(data, b, data[b + TRIE_V6 + 2] as number, words, except, 0);
    }
    if (groupCount > 0 && has & HAS_GROUPS)
      np = collectGroups(data, b, groups, groupsAt, groupCount, prim, np);
    if (np === 0 && ns === 0) return -1;

    const width = data[b + WIDTH] as number;
    if (width === 1) {
      const matched = word(data, prim, np, supp, ns, except, ne, ports, n, 0);
      if (matched === 0) return -1;
      return first ? lowestBit(matched) : 0;
    }
    // Wide bitmaps: only the words both summaries mark, lowest first.
    const summaries = data[b + SUMMARY] as number;
    for (let j = 0; j < summaries; j++) {
      let portWords = 0;
      for (let i = 0; i < n; i++) portWords |= data[(ports[i] as number) - summaries + j] as number;
      if (portWords === 0) continue;
      let peerWords = 0;
      for (let i = 0; i < np; i++) peerWords |= data[(prim[i] as number) - summaries + j] as number;
      for (let i = 0; i < ns; i++) peerWords |= data[(supp[i] as number) - summaries + j] as number;
      let candidates = portWords & peerWords;
      while (candidates !== 0) {
        const w = j * 32 + lowestBit(candidates);
        candidates &= candidates - 1;
        const matched = word(data, prim, np, supp, ns, except, ne, ports, n, w);
        if (matched !== 0) return first ? w * 32 + lowestBit(matched) : w * 32;
      }
    }
    return -1;
  }

  /** Appends the bitmaps of one IPv4 map's prefixes that contain the address; returns the count. */
  private collectV4(
    data: Int32Array,
    b: number,
    map: number,
    address: number,
    out: Int32Array,
    n: number,
  ): number {
    const field = b + FEW_V4 + map * 3;
    const trie = data[field + 2] as number;
    if (trie !== NONE) {
      this.trieWords[0] = address;
      return this.collectTrie(data, b, trie, this.trieWords, out, n);
    }
    const count = data[field] as number;
    for (let i = 0, e = b + (data[field + 1] as number); i < count; i++, e += 3)
      if ((address & (data[e + 1] as number)) === data[e]) out[n++] = b + (data[e + 2] as number);
    return n;
  }

  /** The same through a trie, whose values are the builder's offsets: mapped to the block's. */
  private collectTrie(
    data: Int32Array,
    b: number,
    trie: number,
    words: Uint32Array,
    out: Int32Array,
    n: number,
  ): number {
    if (trie === NONE) return n;
    const from = n;
    n = (this.tries[trie] as LpmTrie).collect(words, out, n);
    const width = data[b + WIDTH] as number;
    const summaries = data[b + SUMMARY] as number;
    const start = b + (data[b + BITS] as number) + summaries;
    for (let i = from; i < n; i++) out[i] = start + (((out[i] as number) / width) | 0) * (width + summaries);
    return n;
  }

  private newHandle(): number {
    if (this.handles === this.offsets.length) {
      const offsets = new Int32Array(this.offsets.length * 2).fill(NONE);
      offsets.set(this.offsets);
      this.offsets = offsets;
      const lengths = new Int32Array(this.lengths.length * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    return this.handles++;
  }

  /** Moves every live block to the front of `into` (blocks are position-independent). */
  private compact(into: Int32Array): number {
    const data = this.arena.data;
    const moves = new Map<number, number>();
    let used = 0;
    for (let handle = 0; handle < this.handles; handle++) {
      const at = this.offsets[handle] as number;
      if (at === NONE) continue;
      const length = this.lengths[handle] as number;
      into.set(data.subarray(at, at + length), used);
      if (at !== used) moves.set(at, used);
      this.offsets[handle] = used;
      used += length;
    }
    if (moves.size > 0) this.onMove(moves);
    return used;
  }

  /** Bytes of the live blocks (what lookups may read; the arena holds free room besides). */
  get usedBytes(): number {
    let ints = 0;
    for (let handle = 0; handle < this.handles; handle++)
      if (this.offsets[handle] !== NONE) ints += this.lengths[handle] as number;
    return 4 * ints;
  }

  /** Bytes held by the arena and its handle arrays (tries excluded). */
  get bytes(): number {
    return this.arena.data.byteLength + this.offsets.byteLength + this.lengths.byteLength;
  }
}

function growInts(ints: Int32Array): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(ints.length * 2);
  grown.set(ints);
  return grown;
}

/** `(prim | (supp & ~except)) & ports` at word w of the collected bitmaps. */
function word(
  data: Int32Array,
  prim: Int32Array,
  np: number,
  supp: Int32Array,
  ns: number,
  except: Int32Array,
  ne: number,
  ports: Int32Array,
  n: number,
  w: number,
): number {
  let peers = 0;
  for (let i = 0; i < np; i++) peers |= data[(prim[i] as number) + w] as number;
  if (ns > 0) {
    let inside = 0;
    for (let i = 0; i < ns; i++) inside |= data[(supp[i] as number) + w] as number;
    let excepted = 0;
    for (let i = 0; i < ne; i++) excepted |= data[(except[i] as number) + w] as number;
    peers |= inside & ~excepted;
  }
  if (peers === 0) return 0;
  let allowed = 0;
  for (let i = 0; i < n; i++) allowed |= data[(ports[i] as number) + w] as number;
  return peers & allowed;
}

/** The index of the lowest set bit of a non-zero word. */
function lowestBit(x: number): number {
  return 31 - Math.clz32(x & -x);
}

/**
 * Appends the bitmaps of the table's entries for the remote's groups: one search of the
 * table's entries per group of the remote (an address is in a few groups; a table may name a
 * thousand).
 */
function collectGroups(
  data: Int32Array,
  b: number,
  groups: Int32Array,
  at: number,
  count: number,
  out: Int32Array,
  n: number,
): number {
  const entries = b + (data[b + GROUP_AT] as number);
  const entryCount = data[b + GROUP_COUNT] as number;
  if (entryCount === 0) return n;
  for (let i = at, last = at + count; i < last; i++) {
    const offset = findEntry(data, entries, entryCount, groups[i] as number);
    if (offset !== NONE) out[n++] = b + offset;
  }
  return n;
}
