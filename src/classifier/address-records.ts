/**
 * Everything a lookup needs to know about one address, in flat typed arrays: the endpoint's
 * table handles (NetworkPolicy ingress/egress, Admin and Baseline tiers), its node, whether the
 * address belongs to a node, and the sorted list of groups it is a member of. A packet lookup
 * then reads one record per end instead of chasing maps and objects: on a 10,000-pod cluster
 * the records and tables stay in cache, where a Map of objects per address did not.
 *
 * IPv4 addresses find their record through an open-addressing hash over an Int32Array; IPv6
 * addresses through a Map (they are not on the numeric packet path). A record lives while
 * anything is stored in it, and its index is reused after.
 */
import { addressWords } from './lpm-trie.ts';
import type { IpAddress } from '../net/ip.ts';

/** Record fields (offsets from a record's base). Table handles are -1 when absent. */
export const INGRESS = 0;
export const EGRESS = 1;
export const ADMIN_INGRESS = 2;
export const ADMIN_EGRESS = 3;
export const BASELINE_INGRESS = 4;
export const BASELINE_EGRESS = 5;
/** The endpoint's node number (0: no endpoint or no node). */
export const ENDPOINT_NODE = 6;
/** The node number whose address this is (0: none). */
export const NODE_ADDRESS_OF = 7;
/** Where the address's sorted group list is in `groups`, and its length. */
export const GROUPS_AT = 8;
export const GROUPS_LENGTH = 9;
const GROUPS_CAPACITY = 10;
const IS_ENDPOINT = 11;
const HASH_KEY = 12;
const STRIDE = 16;

export const TABLE_FIELDS = [INGRESS, EGRESS, ADMIN_INGRESS, ADMIN_EGRESS, BASELINE_INGRESS, BASELINE_EGRESS];

const EMPTY = 0;
const USED = 1;
const TOMBSTONE = 2;

const v6Key = (words: Uint32Array): string => `${words[0]},${words[1]},${words[2]},${words[3]}`;

export class AddressRecords {
  /** STRIDE ints per record. */
  data: Int32Array;
  /** Group lists, referenced by GROUPS_AT/GROUPS_LENGTH (capacity doubles; garbage is compacted). */
  groups: Int32Array;
  private groupsUsed = 0;
  private groupsGarbage = 0;
  private records = 0;
  private readonly freeRecords: number[] = [];
  /** IPv4 hash: per slot [state, address, record base]; a power-of-two number of slots. */
  private hash: Int32Array;
  private hashMask: number;
  /** Slots not EMPTY (live and tombstones): what probing chains run over. */
  private hashUsed = 0;
  private hashLive = 0;
  private readonly v6 = new Map<string, number>();
  private readonly words = new Uint32Array(4);
  /** Times the group lists were compacted (for tests). */
  compactions = 0;

  /** Initial sizes (they grow as needed); tests start small to exercise growth and compaction. */
  constructor(initial: { records?: number; hashSlots?: number; groupInts?: number } = {}) {
    this.data = new Int32Array(STRIDE * (initial.records ?? 1024));
    this.groups = new Int32Array(initial.groupInts ?? 4096);
    const slots = initial.hashSlots ?? 2048;
    this.hash = new Int32Array(3 * slots);
    this.hashMask = slots - 1;
  }

  /** The record base of an IPv4 address (as an unsigned number), or -1. */
  findV4(address: number): number {
    const key = address | 0;
    const hash = this.hash;
    const mask = this.hashMask;
    for (let slot = slotOf(key, mask); ; slot = (slot + 1) & mask) {
      const at = slot * 3;
      const state = hash[at] as number;
      if (state === EMPTY) return -1;
      if (state === USED && hash[at + 1] === key) return hash[at + 2] as number;
    }
  }

  /** The record base of an IPv6 address given as four words, or -1. */
  findV6(words: Uint32Array): number {
    return this.v6.get(v6Key(words)) ?? -1;
  }

  find(ip: IpAddress): number {
    const words = addressWords(ip.family, ip.value, this.words);
    return ip.family === 4 ? this.findV4(words[0] as number) : this.findV6(words);
  }

  /** The record of an address, made empty when missing. */
  ensure(ip: IpAddress): number {
    const found = this.find(ip);
    if (found >= 0) return found;
    const base = this.allocate();
    if (ip.family === 4) {
      const key = (this.words[0] as number) | 0;
      this.data[base + HASH_KEY] = key;
      this.hashInsert(key, base);
    } else this.v6.set(v6Key(this.words), base);
    return base;
  }

  setEndpoint(ip: IpAddress, tables: readonly number[], node: number): void {
    const base = this.ensure(ip);
    const data = this.data;
    TABLE_FIELDS.forEach((field, i) => (data[base + field] = tables[i] as number));
    data[base + ENDPOINT_NODE] = node;
    data[base + IS_ENDPOINT] = 1;
  }

  clearEndpoint(ip: IpAddress): void {
    const base = this.find(ip);
    if (base < 0) return;
    for (const field of TABLE_FIELDS) this.data[base + field] = -1;
    this.data[base + ENDPOINT_NODE] = 0;
    this.data[base + IS_ENDPOINT] = 0;
    this.releaseIfEmpty(ip, base);
  }

  setNodeAddress(ip: IpAddress, node: number): void {
    const base = this.ensure(ip); // first: ensure may grow (replace) the data array
    this.data[base + NODE_ADDRESS_OF] = node;
  }

  isEndpoint(base: number): boolean {
    return base >= 0 && this.data[base + IS_ENDPOINT] === 1;
  }

  groupsAt(base: number): number {
    return this.data[base + GROUPS_AT] as number;
  }

  groupsLength(base: number): number {
    return base < 0 ? 0 : (this.data[base + GROUPS_LENGTH] as number);
  }

  /** Adds a group to the address's sorted list; false when it was there already. */
  addGroup(ip: IpAddress, group: number): boolean {
    const base = this.ensure(ip);
    const data = this.data;
    let at = data[base + GROUPS_AT] as number;
    const length = data[base + GROUPS_LENGTH] as number;
    let position = 0;
    while (position < length && (this.groups[at + position] as number) < group) position++;
    if (position < length && this.groups[at + position] === group) return false;
    if (length === (data[base + GROUPS_CAPACITY] as number)) {
      const capacity = Math.max(4, length * 2);
      const moved = this.allocateGroups(capacity);
      // Allocation may have compacted the lists: read where this one is now.
      const from = data[base + GROUPS_AT] as number;
      this.groups.copyWithin(moved, from, from + length);
      this.groupsGarbage += data[base + GROUPS_CAPACITY] as number;
      at = moved;
      data[base + GROUPS_AT] = moved;
      data[base + GROUPS_CAPACITY] = capacity;
    }
    this.groups.copyWithin(at + position + 1, at + position, at + length);
    this.groups[at + position] = group;
    this.data[base + GROUPS_LENGTH] = length + 1;
    return true;
  }

  removeGroup(ip: IpAddress, group: number): void {
    const base = this.find(ip);
    if (base < 0) return;
    const data = this.data;
    const at = data[base + GROUPS_AT] as number;
    const length = data[base + GROUPS_LENGTH] as number;
    let position = 0;
    while (position < length && this.groups[at + position] !== group) position++;
    if (position === length) return;
    this.groups.copyWithin(at + position, at + position + 1, at + length);
    data[base + GROUPS_LENGTH] = length - 1;
    this.releaseIfEmpty(ip, base);
  }

  private releaseIfEmpty(ip: IpAddress, base: number): void {
    const data = this.data;
    if (data[base + IS_ENDPOINT] === 1 || data[base + NODE_ADDRESS_OF] !== 0) return;
    if (data[base + GROUPS_LENGTH] !== 0) return;
    this.groupsGarbage += data[base + GROUPS_CAPACITY] as number;
    data[base + GROUPS_CAPACITY] = 0;
    data[base + GROUPS_AT] = 0;
    if (ip.family === 4) this.hashRemove(data[base + HASH_KEY] as number);
    else this.v6.delete(v6Key(addressWords(6, ip.value, this.words)));
    this.freeRecords.push(base);
  }

  private allocate(): number {
    const base = this.freeRecords.pop() ?? this.records++ * STRIDE;
    if (base + STRIDE > this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    const data = this.data;
    data.fill(0, base, base + STRIDE);
    for (const field of TABLE_FIELDS) data[base + field] = -1;
    return base;
  }

  private allocateGroups(length: number): number {
    if (this.groupsUsed + length > this.groups.length) {
      // Compact when at least half is garbage; otherwise grow.
      if (this.groupsGarbage * 2 >= this.groupsUsed) this.compactGroups();
      if (this.groupsUsed + length > this.groups.length) {
        const grown = new Int32Array(Math.max(this.groups.length * 2, this.groupsUsed + length));
        grown.set(this.groups.subarray(0, this.groupsUsed));
        this.groups = grown;
      }
    }
    const at = this.groupsUsed;
    this.groupsUsed += length;
    return at;
  }

  /** Moves every live list to the front, in record order. */
  private compactGroups(): void {
    const next = new Int32Array(this.groups.length);
    let used = 0;
    const data = this.data;
    for (let base = 0; base < this.records * STRIDE; base += STRIDE) {
      const capacity = data[base + GROUPS_CAPACITY] as number;
      if (capacity === 0) continue;
      const at = data[base + GROUPS_AT] as number;
      next.set(this.groups.subarray(at, at + (data[base + GROUPS_LENGTH] as number)), used);
      data[base + GROUPS_AT] = used;
      used += capacity;
    }
    this.groups = next;
    this.groupsUsed = used;
    this.groupsGarbage = 0;
    this.compactions++;
  }

  private hashInsert(key: number, base: number): void {
    const size = this.hashMask + 1;
    // Tombstones count against the load; a rehash drops them, growing only if live entries need it.
    if ((this.hashUsed + 1) * 2 > size) this.rehash((this.hashLive + 1) * 4 > size ? size * 2 : size);
    const hash = this.hash;
    const mask = this.hashMask;
    let slot = slotOf(key, mask);
    while (hash[slot * 3] === USED) slot = (slot + 1) & mask;
    if (hash[slot * 3] === EMPTY) this.hashUsed++;
    this.hashLive++;
    hash[slot * 3] = USED;
    hash[slot * 3 + 1] = key;
    hash[slot * 3 + 2] = base;
  }

  private hashRemove(key: number): void {
    const hash = this.hash;
    const mask = this.hashMask;
    for (let slot = slotOf(key, mask); ; slot = (slot + 1) & mask) {
      const state = hash[slot * 3] as number;
      if (state === EMPTY) return;
      if (state === USED && hash[slot * 3 + 1] === key) {
        hash[slot * 3] = TOMBSTONE;
        this.hashLive--;
        return;
      }
    }
  }

  /** A new table of `size` slots holding the live entries (tombstones are dropped). */
  private rehash(size: number): void {
    const old = this.hash;
    this.hash = new Int32Array(3 * size);
    this.hashMask = size - 1;
    this.hashUsed = 0;
    this.hashLive = 0;
    for (let at = 0; at < old.length; at += 3)
      if (old[at] === USED) this.hashInsert(old[at + 1] as number, old[at + 2] as number);
  }

  /** Bytes held by the records, the hash and the group lists. */
  get bytes(): number {
    return this.data.byteLength + this.hash.byteLength + this.groups.byteLength;
  }
}

/** Fibonacci hashing: consecutive pod addresses spread over the table. */
function slotOf(key: number, mask: number): number {
  return (Math.imul(key, 0x9e3779b1) >>> 16) & mask;
}
