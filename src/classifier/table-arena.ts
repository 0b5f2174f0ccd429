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
import { packTable } from './block-packer.ts';
import {
  ACTION_AT,
  ANY,
  BITS,
  COLD_AT,
  FEW_V4,
  findEntry,
  FLAGS,
  GROUP_COUNT,
  groupEntriesAt,
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
  NARROW,
  NONE,
  PORT_COUNT,
  portBitOfKey,
  PORTS,
  RANGE_AT,
  RANGE_COUNT,
  SCAN,
  SUMMARY,
  TRIE_V6,
  WIDTH_SHIFT,
} from './block-layout.ts';

export { portBit } from './block-layout.ts';

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
    const flags = data[at + FLAGS] as number;
    const missing = flags & NARROW ? 0 : NONE;
    if (data[at + L3] !== missing || flags & HAS_RANGES) return -1;
    for (let p = 0; p < 3; p++) if (data[at + ANY + p] !== missing) return -1;
    const count = data[at + PORT_COUNT] as number;
    const slots = count <= SCAN ? count : 1 << hashBits(count);
    let signature = 0;
    for (let i = 0; i < slots; i++)
      if (data[at + PORTS + 2 * i + 1] !== missing)
        signature |= portBitOfKey(data[at + PORTS + 2 * i] as number);
    return signature;
  }

  /** The tier action of a slot of a packed tier table (its block at `at`). */
  action(at: number, slot: number): number {
    const data = this.data;
    return data[at + (data[at + (data[at + COLD_AT] as number) + ACTION_AT] as number) + slot] as number;
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
    const flags = this.data[b + FLAGS] as number;
    return flags & NARROW
      ? this.matchNarrow(b, flags, family, words, groups, groupsAt, groupCount, protocol, port, first)
      : this.matchWide(b, flags, family, words, groups, groupsAt, groupCount, protocol, port, first);
  }

  /**
   * `match` for a narrow block: the entries hold the bitmap words, so the ports' and the peers'
   * words are OR-ed as they are found — no list of bitmaps collected, no bitmap read.
   */
  private matchNarrow(
    b: number,
    flags: number,
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
    const portCount = data[b + PORT_COUNT] as number;
    let ports =
      (data[b + L3] as number) |
      (data[b + ANY + protocol] as number) |
      findEntry(data, b + PORTS, portCount, (protocol << 16) | port, 0);
    const cold = b + (data[b + COLD_AT] as number);
    if (flags & HAS_RANGES) {
      const rangeCount = data[cold + RANGE_COUNT] as number;
      for (let i = 0, r = cold + RANGE_AT; i < rangeCount; i++, r += 4)
        if (data[r] === protocol && port >= (data[r + 1] as number) && port <= (data[r + 2] as number))
          ports |= data[r + 3] as number;
    }
    if (ports === 0) return -1;
    let peers = 0;
    if (groupCount > 0 && flags & HAS_GROUPS) {
      const entries = b + groupEntriesAt(portCount);
      const entryCount = data[b + GROUP_COUNT] as number;
      for (let i = groupsAt, last = groupsAt + groupCount; i < last; i++)
        peers |= findEntry(data, entries, entryCount, groups[i] as number, 0);
    }
    if (family === 4) {
      const address = (words[0] as number) | 0;
      if (flags & HAS_PRIM_V4) peers |= this.narrowV4(data, b, cold, 0, address);
      if (flags & HAS_HOSTS)
        peers |= findEntry(
          data,
          b + (data[cold + HOST_AT] as number),
          data[cold + HOST_COUNT] as number,
          address,
          0,
        );
      if (flags & HAS_SUPP_V4) {
        const inside = this.narrowV4(data, b, cold, 1, address);
        if (inside !== 0) peers |= inside & ~this.narrowV4(data, b, cold, 2, address);
      }
    } else if (flags & HAS_V6) {
      peers |= this.narrowTrie(data, b, cold, data[cold + TRIE_V6] as number, words);
      const inside = this.narrowTrie(data, b, cold, data[cold + TRIE_V6 + 1] as number, words);
      if (inside !== 0)
        peers |= inside & ~this.narrowTrie(data, b, cold, data[cold + TRIE_V6 + 2] as number, words);
    }
    const matched = peers & ports;
    if (matched === 0) return -1;
    return first ? lowestBit(matched) : 0;
  }

  /** The OR of one IPv4 map's words over the prefixes holding the address (narrow blocks). */
  private narrowV4(data: Int32Array, b: number, cold: number, map: number, address: number): number {
    const field = cold + FEW_V4 + map * 3;
    const trie = data[field + 2] as number;
    if (trie !== NONE) {
      this.trieWords[0] = address;
      return this.narrowTrie(data, b, cold, trie, this.trieWords);
    }
    let bits = 0;
    const count = data[field] as number;
    for (let i = 0, e = b + (data[field + 1] as number); i < count; i++, e += 3)
      if ((address & (data[e + 1] as number)) === data[e]) bits |= data[e + 2] as number;
    return bits;
  }

  /** The same through a trie (narrow blocks): the words at the bitmaps its values name. */
  private narrowTrie(data: Int32Array, b: number, cold: number, trie: number, words: Uint32Array): number {
    if (trie === NONE) return 0;
    const n = this.collectTrie(data, b, cold, trie, words, this.prim, 0);
    let bits = 0;
    for (let i = 0; i < n; i++) bits |= data[this.prim[i] as number] as number;
    return bits;
  }

  /** `match` for a wide block: entries hold bitmap offsets, and bitmaps carry summaries. */
  private matchWide(
    b: number,
    flags: number,
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
    const cold = b + (data[b + COLD_AT] as number);
    // Ports first: one short scan, and most denied packets end here.
    let n = 0;
    const l3 = data[b + L3] as number;
    if (l3 !== NONE) this.ports[n++] = b + l3;
    const portCount = data[b + PORT_COUNT] as number;
    const exact = findEntry(data, b + PORTS, portCount, (protocol << 16) | port, NONE);
    if (exact !== NONE) this.ports[n++] = b + exact;
    const any = data[b + ANY + protocol] as number;
    if (any !== NONE) this.ports[n++] = b + any;
    if (flags & HAS_RANGES) {
      const rangeCount = data[cold + RANGE_COUNT] as number;
      for (let i = 0, r = cold + RANGE_AT; i < rangeCount; i++, r += 4) {
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
      if (flags & HAS_PRIM_V4) np = this.collectV4(data, b, cold, 0, address, prim, 0);
      if (flags & HAS_HOSTS) {
        const host = findEntry(
          data,
          b + (data[cold + HOST_AT] as number),
          data[cold + HOST_COUNT] as number,
          address,
          NONE,
        );
        if (host !== NONE) prim[np++] = b + host;
      }
      if (flags & HAS_SUPP_V4) {
        ns = this.collectV4(data, b, cold, 1, address, supp, 0);
        if (ns > 0) ne = this.collectV4(data, b, cold, 2, address, except, 0);
      }
    } else if (flags & HAS_V6) {
      np = this.collectTrie(data, b, cold, data[cold + TRIE_V6] as number, words, prim, 0);
      ns = this.collectTrie(data, b, cold, data[cold + TRIE_V6 + 1] as number, words, supp, 0);
      if (ns > 0) ne = this.collectTrie(data, b, cold, data[cold + TRIE_V6 + 2] as number, words, except, 0);
    }
    if (groupCount > 0 && flags & HAS_GROUPS)
      np = collectGroups(data, b, portCount, groups, groupsAt, groupCount, prim, np);
    if (np === 0 && ns === 0) return -1;

    // Only the words both summaries mark, lowest first.
    const summaries = data[cold + SUMMARY] as number;
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
    cold: number,
    map: number,
    address: number,
    out: Int32Array,
    n: number,
  ): number {
    const field = cold + FEW_V4 + map * 3;
    const trie = data[field + 2] as number;
    if (trie !== NONE) {
      this.trieWords[0] = address;
      return this.collectTrie(data, b, cold, trie, this.trieWords, out, n);
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
    cold: number,
    trie: number,
    words: Uint32Array,
    out: Int32Array,
    n: number,
  ): number {
    if (trie === NONE) return n;
    const from = n;
    n = (this.tries[trie] as LpmTrie).collect(words, out, n);
    const width = (data[b + FLAGS] as number) >>> WIDTH_SHIFT;
    const summaries = data[cold + SUMMARY] as number;
    const start = b + (data[cold + BITS] as number) + summaries;
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
  portCount: number,
  groups: Int32Array,
  at: number,
  count: number,
  out: Int32Array,
  n: number,
): number {
  const entries = b + groupEntriesAt(portCount);
  const entryCount = data[b + GROUP_COUNT] as number;
  if (entryCount === 0) return n;
  for (let i = at, last = at + count; i < last; i++) {
    const offset = findEntry(data, entries, entryCount, groups[i] as number, NONE);
    if (offset !== NONE) out[n++] = b + offset;
  }
  return n;
}
