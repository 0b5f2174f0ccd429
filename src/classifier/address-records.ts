/**
 * Everything a lookup needs to know about one address, in flat typed arrays: the endpoint's
 * table handles (NetworkPolicy ingress/egress, Admin and Baseline tiers), its node, whether the
 * address belongs to a node, and the sorted list of groups it is a member of. A packet lookup
 * then reads one record per end instead of chasing maps and objects.
 *
 * IPv4 records live in the slots of an open-addressing hash (16 ints, one cache line's worth):
 * finding an address is reading its record, not a slot and then a record elsewhere. Up to five
 * groups sit in the record itself (a pod is in a few); longer lists move to an overflow arena.
 *
 * An address has two group lists: the groups NetworkPolicy tables name (inline, what their
 * lookups scan) and the groups only cluster-policy tier tables name (in the overflow arena, read
 * when a tier peer class is computed or a tier table's rules are walked). Kept in one list, a pod
 * under a thousand AdminNetworkPolicies was in 6–11 groups: every list overflowed, so every
 * NetworkPolicy lookup through a table with group entries read one more cache line and probed
 * the table for groups it can never name. The two lists number groups independently (each has
 * its own group layer).
 * Cluster-policy tier tables, which most endpoints lack, are in a side array, one entry per
 * distinct set of tables (endpoint-tier-sets.ts).
 * IPv6 records use the same layout in an array of their own, found through a Map (they are not
 * on the numeric packet path). A record lives while anything is stored in it.
 */
import { addressWords } from './lpm-trie.ts';
import type { IpAddress } from '../net/ip.ts';
import { IntArena } from './int-arena.ts';
import { TierEntries, TIER_FIELDS, TIER_TABLES } from './endpoint-tier-sets.ts';

export {
  ADMIN_EGRESS,
  ADMIN_INGRESS,
  BASELINE_EGRESS,
  BASELINE_INGRESS,
  TIER_FORM,
} from './endpoint-tier-sets.ts';

/** Record fields (offsets from a record's base). Tables are block offsets, -1 when absent. */
/** Which of an address's two group lists a group goes to (see the header). */
export const TABLE_GROUPS = 0;
export const TIER_GROUPS = 1;
export type GroupList = typeof TABLE_GROUPS | typeof TIER_GROUPS;
/**
 * Bits 0–1: the IPv4 slot's state (EMPTY, USED or TOMBSTONE); the bits above: where the tier
 * group list is in the overflow arena, plus one (0: none). The list there: count, capacity, then
 * the sorted groups.
 */
const STATE = 0;
const STATE_MASK = 3;
const TIER_LIST_SHIFT = 2;
const KEY = 1;
export const INGRESS = 2;
export const EGRESS = 3;
/**
 * Port signatures of the ingress and egress tables (see table-arena.ts `portSignature`): a
 * port whose bit is clear is named by no rule of the table, so the packet is decided without
 * reading the table at all.
 */
export const INGRESS_PORTS = 4;
export const EGRESS_PORTS = 5;
/** Where the endpoint's cluster-policy tier tables are in `tiers` (-1: none). */
export const TIERS = 6;
/** The endpoint's node number (0: no endpoint or no node). */
export const ENDPOINT_NODE = 7;
/** The node number whose address this is (0: none). */
export const NODE_ADDRESS_OF = 8;
/**
 * Bit 0: the address is an endpoint's. The bits above: its tier peer class plus one (0: not
 * classified yet; see tier-decision-keys.ts) — kept here because a tier lookup has the remote's record
 * in hand already, and the NetworkPolicy path never reads this field.
 */
const ENDPOINT_AND_CLASS = 9;
/** How many groups the address is in; up to INLINE_GROUPS are at GROUPS, sorted. */
export const GROUP_COUNT = 10;
export const GROUPS = 11;
export const INLINE_GROUPS = 5;
/** With more groups: where the sorted list is in the overflow arena, and its capacity. */
export const OVERFLOW_AT = 11;
const OVERFLOW_CAPACITY = 12;
const STRIDE = 16;

const EMPTY = 0;
const USED = 1;
const TOMBSTONE = 2;

const v6Key = (words: Uint32Array): string => `${words[0]},${words[1]},${words[2]},${words[3]}`;

export class AddressRecords {
  /** IPv4: the hash slots, each a record (a power-of-two number of slots). */
  v4: Int32Array;
  private mask: number;
  /** Slots not EMPTY (live and tombstones): what probing chains run over. */
  private occupied = 0;
  private live = 0;
  /** IPv6 records, by base through `v6Bases`. */
  v6 = new Int32Array(STRIDE * 16);
  private readonly v6Bases = new Map<string, number>();
  private v6Records = 0;
  private readonly freeV6: number[] = [];
  /** Group lists of more than INLINE_GROUPS (capacity doubles; garbage is compacted). */
  private readonly overflowArena: IntArena;
  /** Tier table entries, one per distinct set of an endpoint's tier tables (endpoint-tier-sets.ts). */
  private readonly tierEntries = new TierEntries();
  private readonly words = new Uint32Array(4);
  /**
   * The tier entries' fields, which a record's TIERS field points into: the entries' own array,
   * kept here as a field (re-read after each acquire, the one place it grows) because every
   * tiered packet lookup reads it.
   */
  tiers: Int32Array = this.tierEntries.data;

  get overflow(): Int32Array {
    return this.overflowArena.data;
  }

  /** Times the overflow arena was compacted (for tests). */
  get compactions(): number {
    return this.overflowArena.compactions;
  }

  /** Initial sizes (they grow as needed); tests start small to exercise growth and compaction. */
  constructor(initial: { hashSlots?: number; overflowInts?: number } = {}) {
    const slots = Math.max(2, initial.hashSlots ?? 4096); // a power of two
    this.v4 = new Int32Array(STRIDE * slots);
    this.mask = slots - 1;
    this.overflowArena = new IntArena(initial.overflowInts ?? 4096, (into) => this.compactOverflow(into));
  }

  /** The record base of an IPv4 address (as an unsigned number) in `v4`, or -1. */
  findV4(address: number): number {
    const key = address | 0;
    const v4 = this.v4;
    const mask = this.mask;
    for (let slot = slotOf(key, mask); ; slot = (slot + 1) & mask) {
      const base = slot * STRIDE;
      const state = (v4[base] as number) & STATE_MASK;
      if (state === EMPTY) return -1;
      if (state === USED && v4[base + KEY] === key) return base;
    }
  }

  /** The record base of an IPv6 address given as four words in `v6`, or -1. */
  findV6(words: Uint32Array): number {
    return this.v6Bases.get(v6Key(words)) ?? -1;
  }

  /** The record base of an address (in the array of its family), or -1. */
  find(ip: IpAddress): number {
    const words = addressWords(ip.family, ip.value, this.words);
    return ip.family === 4 ? this.findV4(words[0] as number) : this.findV6(words);
  }

  /** The array holding a family's records. */
  dataOf(ip: IpAddress): Int32Array {
    return ip.family === 4 ? this.v4 : this.v6;
  }

  /**
   * An endpoint's tables (ingress, egress, Admin ingress, Admin egress, Baseline ingress,
   * Baseline egress; -1 when absent) — then, optionally, the four tier tables' form numbers —
   * the port signatures of its ingress and egress tables, and its node number.
   */
  setEndpoint(
    ip: IpAddress,
    tables: readonly number[],
    signatures: readonly [number, number],
    node: number,
  ): void {
    const base = this.ensure(ip);
    const data = this.dataOf(ip);
    data[base + INGRESS] = tables[0] as number;
    data[base + EGRESS] = tables[1] as number;
    data[base + INGRESS_PORTS] = signatures[0];
    data[base + EGRESS_PORTS] = signatures[1];
    const tierTables = tables.slice(2, 2 + TIER_FIELDS);
    while (tierTables.length < TIER_FIELDS) tierTables.push(-1);
    const before = data[base + TIERS] as number;
    const entry = tierTables.slice(0, TIER_TABLES).some((t) => t !== -1)
      ? this.tierEntries.acquire(tierTables)
      : -1;
    data[base + TIERS] = entry;
    this.tiers = this.tierEntries.data;
    if (before >= 0) this.tierEntries.release(before);
    data[base + ENDPOINT_NODE] = node;
    data[base + ENDPOINT_AND_CLASS] = (data[base + ENDPOINT_AND_CLASS] as number) | 1;
  }

  /** The endpoint's tables, in setEndpoint's order (-1 when absent). */
  tablesOf(ip: IpAddress): number[] {
    const base = this.find(ip);
    if (base < 0) return [-1, -1, -1, -1, -1, -1];
    const data = this.dataOf(ip);
    const entry = data[base + TIERS] as number;
    const tiers = entry < 0 ? [-1, -1, -1, -1] : this.tierEntries.tables(entry);
    return [data[base + INGRESS] as number, data[base + EGRESS] as number, ...tiers];
  }

  clearEndpoint(ip: IpAddress): void {
    const base = this.find(ip);
    if (base < 0) return;
    const data = this.dataOf(ip);
    data[base + INGRESS] = data[base + EGRESS] = -1;
    data[base + INGRESS_PORTS] = data[base + EGRESS_PORTS] = 0;
    const entry = data[base + TIERS] as number;
    if (entry >= 0) this.tierEntries.release(entry);
    data[base + TIERS] = -1;
    data[base + ENDPOINT_NODE] = 0;
    data[base + ENDPOINT_AND_CLASS] = (data[base + ENDPOINT_AND_CLASS] as number) & ~1;
    this.releaseIfEmpty(ip, base);
  }

  setNodeAddress(ip: IpAddress, node: number): void {
    const base = this.ensure(ip);
    this.dataOf(ip)[base + NODE_ADDRESS_OF] = node;
  }

  isEndpoint(ip: IpAddress): boolean {
    const base = this.find(ip);
    return base >= 0 && ((this.dataOf(ip)[base + ENDPOINT_AND_CLASS] as number) & 1) === 1;
  }

  /** Forgets the address's tier peer class (what it is in changed): the next tier lookup classifies it. */
  forgetClass(ip: IpAddress): void {
    const base = this.find(ip);
    if (base >= 0) forgetClassAt(this.dataOf(ip), base);
  }

  /** Forgets every address's tier peer class (the classes were renumbered, or a tier CIDR came). */
  forgetAllClasses(): void {
    for (let base = 0; base < this.v4.length; base += STRIDE)
      if (((this.v4[base] as number) & STATE_MASK) === USED) forgetClassAt(this.v4, base);
    for (const base of this.v6Bases.values()) forgetClassAt(this.v6, base);
  }

  /** The address's groups in one of its lists, sorted (a copy; lookups read the record). */
  groupsOf(ip: IpAddress, which: GroupList = TABLE_GROUPS): number[] {
    const base = this.find(ip);
    return base < 0 ? [] : this.groupsAt(this.dataOf(ip), base, which);
  }

  /** The groups of the record at `base` in `data` (v4 or v6) in one list, sorted (a copy). */
  groupsAt(data: Int32Array, base: number, which: GroupList = TABLE_GROUPS): number[] {
    if (which === TIER_GROUPS) {
      const at = this.tierListAt(data, base);
      return at < 0 ? [] : [...this.overflow.subarray(at + 2, at + 2 + (this.overflow[at] as number))];
    }
    const count = data[base + GROUP_COUNT] as number;
    if (count <= INLINE_GROUPS) return [...data.subarray(base + GROUPS, base + GROUPS + count)];
    const at = data[base + OVERFLOW_AT] as number;
    return [...this.overflow.subarray(at, at + count)];
  }

  /**
   * Where the record's tier group list is in the overflow arena (its count, capacity, then the
   * groups), or -1 when it has none.
   */
  tierListAt(data: Int32Array, base: number): number {
    return ((data[base + STATE] as number) >>> TIER_LIST_SHIFT) - 1;
  }

  /** Adds a group to one of the address's sorted lists; false when it was there already. */
  addGroup(ip: IpAddress, group: number, which: GroupList = TABLE_GROUPS): boolean {
    const base = this.ensure(ip);
    const data = this.dataOf(ip);
    const list = this.groupsAt(data, base, which);
    let position = 0;
    while (position < list.length && (list[position] as number) < group) position++;
    if (list[position] === group) return false;
    list.splice(position, 0, group);
    if (which === TIER_GROUPS) this.writeTierGroups(data, base, list);
    else this.writeGroups(data, base, list);
    return true;
  }

  removeGroup(ip: IpAddress, group: number, which: GroupList = TABLE_GROUPS): void {
    const base = this.find(ip);
    if (base < 0) return;
    const data = this.dataOf(ip);
    const list = this.groupsAt(data, base, which);
    const position = list.indexOf(group);
    if (position < 0) return;
    list.splice(position, 1);
    if (which === TIER_GROUPS) this.writeTierGroups(data, base, list);
    else this.writeGroups(data, base, list);
    this.releaseIfEmpty(ip, base);
  }

  /** Stores a record's sorted tier group list in the overflow arena (none when empty). */
  private writeTierGroups(data: Int32Array, base: number, list: readonly number[]): void {
    // What the address is in changes: so may its tier peer class.
    forgetClassAt(data, base);
    const state = (data[base + STATE] as number) & STATE_MASK;
    let at = this.tierListAt(data, base);
    const capacity = at < 0 ? 0 : (this.overflow[at + 1] as number);
    if (list.length > capacity || list.length === 0) {
      if (at >= 0) this.overflowArena.free(2 + capacity);
      data[base + STATE] = state;
      if (list.length === 0) return;
      const grown = Math.max(4, 2 * capacity, list.length);
      // Compaction may move other lists, never this one (its old space is already garbage).
      at = this.overflowArena.allocate(2 + grown);
      this.overflow[at + 1] = grown;
      data[base + STATE] = state | ((at + 1) << TIER_LIST_SHIFT);
    }
    this.overflow[at] = list.length;
    this.overflow.set(list, at + 2);
  }

  /** Stores a record's sorted group list: inline when it fits, else in the overflow arena. */
  private writeGroups(data: Int32Array, base: number, list: readonly number[]): void {
    // What the address is in changes: so may its tier peer class.
    forgetClassAt(data, base);
    const before = data[base + GROUP_COUNT] as number;
    const capacity = before > INLINE_GROUPS ? (data[base + OVERFLOW_CAPACITY] as number) : 0;
    data[base + GROUP_COUNT] = list.length;
    if (list.length <= INLINE_GROUPS) {
      this.overflowArena.free(capacity);
      data.fill(0, base + GROUPS, base + GROUPS + INLINE_GROUPS);
      data.set(list, base + GROUPS);
      return;
    }
    if (list.length <= capacity) {
      this.overflow.set(list, data[base + OVERFLOW_AT]);
      return;
    }
    this.overflowArena.free(capacity);
    const grown = Math.max(8, capacity * 2);
    // Compaction may move other lists, never this one (its old space is already garbage).
    data[base + GROUP_COUNT] = 0;
    const at = this.overflowArena.allocate(grown);
    data[base + GROUP_COUNT] = list.length;
    data[base + OVERFLOW_AT] = at;
    data[base + OVERFLOW_CAPACITY] = grown;
    this.overflow.set(list, at);
  }

  /** The record of an address, made empty when missing. */
  private ensure(ip: IpAddress): number {
    const found = this.find(ip);
    if (found >= 0) return found;
    if (ip.family === 6) {
      const base = this.freeV6.pop() ?? this.v6Records++ * STRIDE;
      if (base + STRIDE > this.v6.length) {
        const grown = new Int32Array(this.v6.length * 2);
        grown.set(this.v6);
        this.v6 = grown;
      }
      clearRecord(this.v6, base);
      this.v6Bases.set(v6Key(this.words), base);
      return base;
    }
    const key = (this.words[0] as number) | 0;
    const size = this.mask + 1;
    // Tombstones count against the load; a rehash drops them, growing only if live entries need it.
    if ((this.occupied + 1) * 2 > size) this.rehash((this.live + 1) * 4 > size ? size * 2 : size);
    const v4 = this.v4;
    let slot = slotOf(key, this.mask);
    while (((v4[slot * STRIDE] as number) & STATE_MASK) === USED) slot = (slot + 1) & this.mask;
    const base = slot * STRIDE;
    if (((v4[base] as number) & STATE_MASK) === EMPTY) this.occupied++;
    this.live++;
    clearRecord(v4, base);
    v4[base + STATE] = USED;
    v4[base + KEY] = key;
    return base;
  }

  private releaseIfEmpty(ip: IpAddress, base: number): void {
    const data = this.dataOf(ip);
    if (((data[base + ENDPOINT_AND_CLASS] as number) & 1) === 1 || data[base + NODE_ADDRESS_OF] !== 0) return;
    if (data[base + GROUP_COUNT] !== 0 || this.tierListAt(data, base) >= 0) return;
    if (ip.family === 4) {
      data[base + STATE] = TOMBSTONE;
      this.live--;
    } else {
      this.v6Bases.delete(v6Key(addressWords(6, ip.value, this.words)));
      this.freeV6.push(base);
    }
  }

  /** A table of `size` slots holding the live records (tombstones are dropped). */
  private rehash(size: number): void {
    const old = this.v4;
    this.v4 = new Int32Array(STRIDE * size);
    this.mask = size - 1;
    this.occupied = 0;
    for (let base = 0; base < old.length; base += STRIDE) {
      if (((old[base] as number) & STATE_MASK) !== USED) continue;
      let slot = slotOf(old[base + KEY] as number, this.mask);
      while (((this.v4[slot * STRIDE] as number) & STATE_MASK) === USED) slot = (slot + 1) & this.mask;
      this.v4.set(old.subarray(base, base + STRIDE), slot * STRIDE);
      this.occupied++;
    }
  }

  /** Moves every live overflow list to the front of `into`. */
  private compactOverflow(into: Int32Array): number {
    const overflow = this.overflow;
    let used = 0;
    const move = (data: Int32Array, base: number): void => {
      if ((data[base + GROUP_COUNT] as number) <= INLINE_GROUPS) return;
      const at = data[base + OVERFLOW_AT] as number;
      into.set(overflow.subarray(at, at + (data[base + GROUP_COUNT] as number)), used);
      data[base + OVERFLOW_AT] = used;
      used += data[base + OVERFLOW_CAPACITY] as number;
    };
    const moveTier = (data: Int32Array, base: number): void => {
      const at = ((data[base + STATE] as number) >>> TIER_LIST_SHIFT) - 1;
      if (at < 0) return;
      const capacity = overflow[at + 1] as number;
      into.set(overflow.subarray(at, at + 2 + (overflow[at] as number)), used);
      data[base + STATE] = ((data[base + STATE] as number) & STATE_MASK) | ((used + 1) << TIER_LIST_SHIFT);
      used += 2 + capacity;
    };
    for (let base = 0; base < this.v4.length; base += STRIDE)
      if (((this.v4[base] as number) & STATE_MASK) === USED) {
        move(this.v4, base);
        moveTier(this.v4, base);
      }
    for (const base of this.v6Bases.values()) {
      move(this.v6, base);
      moveTier(this.v6, base);
    }
    return used;
  }

  /** Table blocks moved (old → new offset): every record's and tier entry's tables follow. */
  remapTables(moves: ReadonlyMap<number, number>): void {
    const remap = (data: Int32Array, at: number): void => {
      const moved = moves.get(data[at] as number);
      if (moved !== undefined) data[at] = moved;
    };
    const records = (data: Int32Array, base: number): void => {
      remap(data, base + INGRESS);
      remap(data, base + EGRESS);
    };
    for (let base = 0; base < this.v4.length; base += STRIDE)
      if (((this.v4[base] as number) & STATE_MASK) === USED) records(this.v4, base);
    for (const base of this.v6Bases.values()) records(this.v6, base);
    this.tierEntries.remapTables(remap);
  }

  /** Records held (IPv4 and IPv6). */
  get size(): number {
    return this.live + this.v6Bases.size;
  }

  /** Bytes held by the records, the tier entries and the overflow lists. */
  get bytes(): number {
    return this.v4.byteLength + this.v6.byteLength + this.tiers.byteLength + this.overflow.byteLength;
  }
}

/** The tier peer class of the record at `base` (-1: not classified yet). */
export function peerClassAt(data: Int32Array, base: number): number {
  return ((data[base + ENDPOINT_AND_CLASS] as number) >>> 1) - 1;
}

export function setPeerClassAt(data: Int32Array, base: number, peerClass: number): void {
  data[base + ENDPOINT_AND_CLASS] =
    ((peerClass + 1) << 1) | ((data[base + ENDPOINT_AND_CLASS] as number) & 1) | 0;
}

function forgetClassAt(data: Int32Array, base: number): void {
  data[base + ENDPOINT_AND_CLASS] = (data[base + ENDPOINT_AND_CLASS] as number) & 1;
}

function clearRecord(data: Int32Array, base: number): void {
  data.fill(0, base, base + STRIDE);
  data[base + INGRESS] = data[base + EGRESS] = data[base + TIERS] = -1;
}

/**
 * Fibonacci hashing: the top bits of the product, as many as the table has (consecutive pod
 * addresses spread over every slot, however large the table).
 */
function slotOf(key: number, mask: number): number {
  return Math.imul(key, 0x9e3779b1) >>> Math.clz32(mask);
}
