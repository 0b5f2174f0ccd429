/**
 * Everything a lookup needs to know about one address, in flat typed arrays: the endpoint's
 * table handles (NetworkPolicy ingress/egress, Admin and Baseline tiers), its node, whether the
 * address belongs to a node, and the sorted list of groups it is a member of. A packet lookup
 * then reads one record per end instead of chasing maps and objects.
 *
 * A record is two halves at the same base in two arrays (record-layout.ts): the hot half, what
 * every lookup reads for both ends, and the cold half (groups, node address), read by lookups
 * through tables with group entries. IPv4 records are the slots of a hash (record-hash.ts).
 * Up to five groups sit in the cold half (a pod is in a few); longer lists move to an overflow
 * arena.
 *
 * An address has two group lists: the groups NetworkPolicy tables name (inline, what their
 * lookups scan) and the groups only cluster-policy tier tables name (in the overflow arena, read
 * when a tier peer class is computed or a tier table's rules are walked). Kept in one list, a pod
 * under a thousand AdminNetworkPolicies was in 6–11 groups: every list overflowed, so every
 * NetworkPolicy lookup through a table with group entries read one more cache line and probed
 * the table for groups it can never name. The two lists number groups independently (each has
 * its own group layer).
 * Cluster-policy tier tables, which most endpoints lack, are in a side array, one entry per
 * distinct set of tables (tier-entries.ts).
 * IPv6 records use the same layout in an array of their own, found through a Map (they are not
 * on the numeric packet path). A record lives while anything is stored in it.
 */
import { addressWords } from './lpm-trie.ts';
import type { IpAddress } from '../net/ip.ts';
import { IntArena } from './int-arena.ts';
import { TierEntries, TIER_FIELDS, TIER_TABLES } from './tier-entries.ts';
import { V4RecordHash } from './record-hash.ts';
import {
  clearRecord,
  EGRESS,
  EGRESS_PORTS,
  ENDPOINT_FLAG,
  ENDPOINT_NODE,
  forgetClassAt,
  GROUP_COUNT,
  GROUPS,
  INGRESS,
  INGRESS_PORTS,
  INLINE_GROUPS,
  NODE_ADDRESS_FLAG,
  NODE_ADDRESS_OF,
  OVERFLOW_AT,
  OVERFLOW_CAPACITY,
  STATE,
  STRIDE,
  TIER_LIST,
  TIERS,
} from './record-layout.ts';

export { ADMIN_EGRESS, ADMIN_INGRESS, BASELINE_EGRESS, BASELINE_INGRESS, TIER_FORM } from './tier-entries.ts';
export {
  EGRESS,
  EGRESS_PORTS,
  ENDPOINT_NODE,
  GROUP_COUNT,
  GROUPS,
  INGRESS,
  INGRESS_PORTS,
  INLINE_GROUPS,
  isNodeAddressAt,
  NODE_ADDRESS_OF,
  OVERFLOW_AT,
  peerClassAt,
  setPeerClassAt,
  TIERS,
} from './record-layout.ts';

/** Which of an address's two group lists a group goes to (see the header). */
export const TABLE_GROUPS = 0;
export const TIER_GROUPS = 1;
export type GroupList = typeof TABLE_GROUPS | typeof TIER_GROUPS;

const v6Key = (words: Uint32Array): string => `${words[0]},${words[1]},${words[2]},${words[3]}`;

export class AddressRecords {
  /** IPv4 records: the hash whose slots are their hot halves, the cold halves beside. */
  private readonly hash: V4RecordHash;
  /** IPv6 records, by base through `v6Bases`. */
  v6 = new Int32Array(STRIDE * 16);
  v6Cold = new Int32Array(STRIDE * 16);
  private readonly v6Bases = new Map<string, number>();
  private v6Records = 0;
  private readonly freeV6: number[] = [];
  /** Group lists of more than INLINE_GROUPS (capacity doubles; garbage is compacted). */
  private readonly overflowArena: IntArena;
  /** Tier table entries, one per distinct set of an endpoint's tier tables (tier-entries.ts). */
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
    this.hash = new V4RecordHash(initial.hashSlots ?? 4096);
    this.overflowArena = new IntArena(initial.overflowInts ?? 4096, (into) => this.compactOverflow(into));
  }

  /** IPv4 records' hot halves (the hash's slots; a new array when it grows). */
  get v4(): Int32Array {
    return this.hash.hot;
  }

  /** IPv4 records' cold halves, at the same bases. */
  get v4Cold(): Int32Array {
    return this.hash.cold;
  }

  /** The record base of an IPv4 address (as an unsigned number) in `v4`, or -1. */
  findV4(address: number): number {
    return this.hash.find(address | 0);
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

  /** The array holding a family's records (their hot halves). */
  dataOf(ip: IpAddress): Int32Array {
    return ip.family === 4 ? this.v4 : this.v6;
  }

  /** The cold halves beside the hot halves in `data` (v4 or v6). */
  coldOf(data: Int32Array): Int32Array {
    return data === this.v6 ? this.v6Cold : this.v4Cold;
  }

  /** The node number whose address this is (0: none). */
  nodeAddressOf(ip: IpAddress): number {
    const base = this.find(ip);
    return base < 0 ? 0 : (this.coldOf(this.dataOf(ip))[base + NODE_ADDRESS_OF] as number);
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
    data[base + STATE] = (data[base + STATE] as number) | ENDPOINT_FLAG;
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
    data[base + STATE] = (data[base + STATE] as number) & ~ENDPOINT_FLAG;
    this.releaseIfEmpty(ip, base);
  }

  setNodeAddress(ip: IpAddress, node: number): void {
    const base = this.ensure(ip);
    const data = this.dataOf(ip);
    this.coldOf(data)[base + NODE_ADDRESS_OF] = node;
    const state = data[base + STATE] as number;
    data[base + STATE] = node !== 0 ? state | NODE_ADDRESS_FLAG : state & ~NODE_ADDRESS_FLAG;
  }

  isEndpoint(ip: IpAddress): boolean {
    const base = this.find(ip);
    return base >= 0 && ((this.dataOf(ip)[base + STATE] as number) & ENDPOINT_FLAG) !== 0;
  }

  /** Forgets the address's tier peer class (what it is in changed): the next tier lookup classifies it. */
  forgetClass(ip: IpAddress): void {
    const base = this.find(ip);
    if (base >= 0) forgetClassAt(this.dataOf(ip), base);
  }

  /** Forgets every address's tier peer class (the classes were renumbered, or a tier CIDR came). */
  forgetAllClasses(): void {
    const v4 = this.v4;
    this.hash.forEach((base) => forgetClassAt(v4, base));
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
    const cold = this.coldOf(data);
    const count = cold[base + GROUP_COUNT] as number;
    if (count <= INLINE_GROUPS) return [...cold.subarray(base + GROUPS, base + GROUPS + count)];
    const at = cold[base + OVERFLOW_AT] as number;
    return [...this.overflow.subarray(at, at + count)];
  }

  /**
   * Where the record's tier group list is in the overflow arena (its count, capacity, then the
   * groups), or -1 when it has none.
   */
  tierListAt(data: Int32Array, base: number): number {
    return (this.coldOf(data)[base + TIER_LIST] as number) - 1;
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
    const cold = this.coldOf(data);
    let at = this.tierListAt(data, base);
    const capacity = at < 0 ? 0 : (this.overflow[at + 1] as number);
    if (list.length > capacity || list.length === 0) {
      if (at >= 0) this.overflowArena.free(2 + capacity);
      cold[base + TIER_LIST] = 0;
      if (list.length === 0) return;
      const grown = Math.max(4, 2 * capacity, list.length);
      // Compaction may move other lists, never this one (its old space is already garbage).
      at = this.overflowArena.allocate(2 + grown);
      this.overflow[at + 1] = grown;
      cold[base + TIER_LIST] = at + 1;
    }
    this.overflow[at] = list.length;
    this.overflow.set(list, at + 2);
  }

  /** Stores a record's sorted group list: inline when it fits, else in the overflow arena. */
  private writeGroups(data: Int32Array, base: number, list: readonly number[]): void {
    // What the address is in changes: so may its tier peer class.
    forgetClassAt(data, base);
    const cold = this.coldOf(data);
    const before = cold[base + GROUP_COUNT] as number;
    const capacity = before > INLINE_GROUPS ? (cold[base + OVERFLOW_CAPACITY] as number) : 0;
    cold[base + GROUP_COUNT] = list.length;
    if (list.length <= INLINE_GROUPS) {
      this.overflowArena.free(capacity);
      cold.fill(0, base + GROUPS, base + GROUPS + INLINE_GROUPS);
      cold.set(list, base + GROUPS);
      return;
    }
    if (list.length <= capacity) {
      this.overflow.set(list, cold[base + OVERFLOW_AT]);
      return;
    }
    this.overflowArena.free(capacity);
    const grown = Math.max(8, capacity * 2);
    // Compaction may move other lists, never this one (its old space is already garbage).
    cold[base + GROUP_COUNT] = 0;
    const at = this.overflowArena.allocate(grown);
    cold[base + GROUP_COUNT] = list.length;
    cold[base + OVERFLOW_AT] = at;
    cold[base + OVERFLOW_CAPACITY] = grown;
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
        const grownCold = new Int32Array(this.v6Cold.length * 2);
        grownCold.set(this.v6Cold);
        this.v6Cold = grownCold;
      }
      clearRecord(this.v6, this.v6Cold, base);
      this.v6Bases.set(v6Key(this.words), base);
      return base;
    }
    return this.hash.insert((this.words[0] as number) | 0);
  }

  private releaseIfEmpty(ip: IpAddress, base: number): void {
    const data = this.dataOf(ip);
    const cold = this.coldOf(data);
    if (((data[base + STATE] as number) & (ENDPOINT_FLAG | NODE_ADDRESS_FLAG)) !== 0) return;
    if (cold[base + GROUP_COUNT] !== 0 || this.tierListAt(data, base) >= 0) return;
    if (ip.family === 4) {
      this.hash.remove(base);
    } else {
      this.v6Bases.delete(v6Key(addressWords(6, ip.value, this.words)));
      this.freeV6.push(base);
    }
  }

  /** Moves every live overflow list to the front of `into`. */
  private compactOverflow(into: Int32Array): number {
    const overflow = this.overflow;
    let used = 0;
    // `cold`: a family's cold halves.
    const move = (cold: Int32Array, base: number): void => {
      if ((cold[base + GROUP_COUNT] as number) <= INLINE_GROUPS) return;
      const at = cold[base + OVERFLOW_AT] as number;
      into.set(overflow.subarray(at, at + (cold[base + GROUP_COUNT] as number)), used);
      cold[base + OVERFLOW_AT] = used;
      used += cold[base + OVERFLOW_CAPACITY] as number;
    };
    const moveTier = (cold: Int32Array, base: number): void => {
      const at = (cold[base + TIER_LIST] as number) - 1;
      if (at < 0) return;
      const capacity = overflow[at + 1] as number;
      into.set(overflow.subarray(at, at + 2 + (overflow[at] as number)), used);
      cold[base + TIER_LIST] = used + 1;
      used += 2 + capacity;
    };
    const v4Cold = this.v4Cold;
    this.hash.forEach((base) => {
      move(v4Cold, base);
      moveTier(v4Cold, base);
    });
    for (const base of this.v6Bases.values()) {
      move(this.v6Cold, base);
      moveTier(this.v6Cold, base);
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
    const v4 = this.v4;
    this.hash.forEach((base) => records(v4, base));
    for (const base of this.v6Bases.values()) records(this.v6, base);
    this.tierEntries.remapTables(remap);
  }

  /** Records held (IPv4 and IPv6). */
  get size(): number {
    return this.hash.live + this.v6Bases.size;
  }

  /** Bytes held by the records (both halves), the tier entries and the overflow lists. */
  get bytes(): number {
    const halves = this.v4.byteLength + this.v4Cold.byteLength + this.v6.byteLength + this.v6Cold.byteLength;
    return halves + this.tiers.byteLength + this.overflow.byteLength;
  }

  /** The IPv4 hash's slots and live records (for figures). */
  get v4Fill(): { slots: number; live: number } {
    return { slots: this.hash.size, live: this.hash.live };
  }
}
