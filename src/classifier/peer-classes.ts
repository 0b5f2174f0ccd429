/**
 * Peer classes: the seed's "the rules matching the peer are one bitmap" for cluster-policy tier
 * tables. A tier table names its peers by address groups (namespace and pod selectors, named-port
 * partitions), and an address is in several of them (eight in shape a with 1,000
 * AdminNetworkPolicies); probing the table once per group of the remote address was most of a
 * tiered lookup. Addresses in the same tier groups are one class — as Cilium's identities are
 * the pods with the same labels — and each tier table keeps, per class that is in any of its
 * groups, the OR of those groups' bitmaps: a lookup reads the remote's class from its record and
 * finds one bitmap, whatever the number of groups or policies.
 *
 * Only groups some tier table uses count (NetworkPolicy tables keep their per-group entries):
 * classes stay few (800 at shape a ×0.1 against 6,968 distinct full group lists). A group is
 * marked when a tier table first uses it and stays marked — a finer class than needed is still
 * exact. Work per change follows what it touches: an address whose tier groups change moves to
 * another class; a new class gets an entry in the tables naming one of its groups; a class whose
 * last address left is removed from those tables; a new table computes the classes of its groups.
 */
/** An address in no tier group, or an absent class entry. */
export const NO_CLASS = -1;
const EMPTY = -1;

interface PeerClass {
  readonly key: string;
  /** The class's tier groups, sorted. */
  readonly groups: readonly number[];
  /** Address records in the class. */
  users: number;
}

/**
 * One tier table's class entries: an open-addressing hash from class to the offset of a bitmap
 * in `bits` (each bitmap after its summary words, as in a packed block; equal bitmaps shared).
 * Keys and values alternate in `slots`, so a lookup reads one cache line for both.
 */
export class ClassMap {
  slots: Int32Array;
  mask: number;
  private count = 0;
  bits: Int32Array;
  private usedBits = 0;
  readonly summaries: number;
  private readonly stride: number;
  /** Shared bitmaps by content, with their users; free places to reuse. */
  private readonly byContent = new Map<string, { at: number; users: number }>();
  private readonly contentAt = new Map<number, string>();
  private readonly freeBits: number[] = [];

  /** `groupBits`: the table's bitmap (its `width` words) of each group it names. */
  constructor(
    readonly groupBits: ReadonlyMap<number, Int32Array>,
    readonly width: number,
  ) {
    this.summaries = width === 1 ? 0 : Math.ceil(width / 32);
    this.stride = width + this.summaries;
    this.slots = new Int32Array(32).fill(EMPTY);
    this.mask = 15;
    this.bits = new Int32Array(this.stride * 8);
  }

  /** Where the class's bitmap starts in `bits` (after its summaries), or NO_CLASS. */
  find(peerClass: number): number {
    const slots = this.slots;
    const mask = this.mask;
    for (let slot = slotOf(peerClass, mask); ; slot = (slot + 1) & mask) {
      const key = slots[2 * slot] as number;
      if (key === peerClass) return slots[2 * slot + 1] as number;
      if (key === EMPTY) return NO_CLASS;
    }
  }

  /** Entries held (for tests and figures). */
  get size(): number {
    return this.count;
  }

  /** Bytes of the hash and the bitmaps. */
  get bytes(): number {
    return this.slots.byteLength + this.bits.byteLength;
  }

  /** Adds the class (not yet present) whose tier groups are `groups`: the OR of the table's bitmaps of them. */
  add(peerClass: number, groups: readonly number[]): void {
    const words = new Int32Array(this.width);
    let any = 0;
    for (const group of groups) {
      const bits = this.groupBits.get(group);
      if (!bits) continue;
      for (let w = 0; w < this.width; w++) any |= words[w] = (words[w] as number) | (bits[w] as number);
    }
    if (any === 0) return;
    const content = words.join(',');
    let shared = this.byContent.get(content);
    if (!shared) {
      shared = { at: this.place(words), users: 0 };
      this.byContent.set(content, shared);
      this.contentAt.set(shared.at, content);
    }
    shared.users++;
    if ((this.count + 1) * 2 > this.mask + 1) this.rehash((this.mask + 1) * 2);
    this.insert(peerClass, shared.at);
    this.count++;
  }

  /** Removes the class's entry, if it has one. */
  delete(peerClass: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let slot = slotOf(peerClass, mask);
    while (slots[2 * slot] !== peerClass) {
      if (slots[2 * slot] === EMPTY) return;
      slot = (slot + 1) & mask;
    }
    const at = slots[2 * slot + 1] as number;
    const content = this.contentAt.get(at) as string;
    const shared = this.byContent.get(content) as { at: number; users: number };
    if (--shared.users === 0) {
      this.byContent.delete(content);
      this.contentAt.delete(at);
      this.freeBits.push(at);
    }
    this.count--;
    // Backward-shift deletion: later entries of the probe chain move into the hole.
    let hole = slot;
    for (let next = (hole + 1) & mask; slots[2 * next] !== EMPTY; next = (next + 1) & mask) {
      const home = slotOf(slots[2 * next] as number, mask);
      // The entry at `next` fills the hole when its home is not cyclically in (hole, next].
      if (((next - home) & mask) >= ((next - hole) & mask)) {
        slots[2 * hole] = slots[2 * next] as number;
        slots[2 * hole + 1] = slots[2 * next + 1] as number;
        hole = next;
      }
    }
    slots[2 * hole] = EMPTY;
  }

  /** Places a bitmap (summary words first) in `bits`; returns the offset of its first word. */
  private place(words: Int32Array): number {
    let at = this.freeBits.pop();
    if (at === undefined) {
      if (this.usedBits + this.stride > this.bits.length) {
        const grown = new Int32Array(this.bits.length * 2);
        grown.set(this.bits);
        this.bits = grown;
      }
      at = this.usedBits + this.summaries;
      this.usedBits += this.stride;
    }
    const start = at - this.summaries;
    this.bits.fill(0, start, start + this.stride);
    for (let w = 0; w < this.width; w++) {
      const value = words[w] as number;
      this.bits[at + w] = value;
      if (this.summaries > 0 && value !== 0)
        this.bits[start + (w >>> 5)] = (this.bits[start + (w >>> 5)] as number) | (1 << (w & 31));
    }
    return at;
  }

  private insert(peerClass: number, at: number): void {
    let slot = slotOf(peerClass, this.mask);
    while (this.slots[2 * slot] !== EMPTY) slot = (slot + 1) & this.mask;
    this.slots[2 * slot] = peerClass;
    this.slots[2 * slot + 1] = at;
  }

  private rehash(size: number): void {
    const old = this.slots;
    this.slots = new Int32Array(2 * size).fill(EMPTY);
    this.mask = size - 1;
    for (let i = 0; i < old.length; i += 2)
      if (old[i] !== EMPTY) this.insert(old[i] as number, old[i + 1] as number);
  }
}

/** The classes of addresses by their tier groups, and every tier table's class map. */
export class PeerClasses {
  private readonly tierGroups = new Set<number>();
  private readonly byKey = new Map<string, number>();
  private readonly classes: (PeerClass | undefined)[] = [];
  private readonly freeIds: number[] = [];
  private readonly classesOfGroup = new Map<number, Set<number>>();
  private readonly mapsOfGroup = new Map<number, Set<number>>();
  /** Class maps by the number a table's block holds (packed-layout CLASSES). */
  readonly maps: (ClassMap | undefined)[] = [];
  private readonly freeMaps: number[] = [];

  /** Marks a group as used by a tier table; true when it was not yet (its members' classes must be recomputed). */
  markTier(group: number): boolean {
    if (this.tierGroups.has(group)) return false;
    this.tierGroups.add(group);
    return true;
  }

  /** Classes in use (for tests and figures). */
  get size(): number {
    return this.byKey.size;
  }

  /** Class entries over all tables, and the bytes of their maps (for figures). */
  get footprint(): { entries: number; bytes: number } {
    let entries = 0;
    let bytes = 0;
    for (const map of this.maps) {
      if (!map) continue;
      entries += map.size;
      bytes += map.bytes;
    }
    return { entries, bytes };
  }

  /**
   * The class of an address whose sorted groups are `groups`, taking the place of `previous`
   * (released): NO_CLASS when it is in no tier group.
   */
  classOf(groups: readonly number[], previous: number): number {
    let key = '';
    let tier: number[] | undefined;
    for (const group of groups) {
      if (!this.tierGroups.has(group)) continue;
      key = key === '' ? String(group) : `${key},${group}`;
      (tier ??= []).push(group);
    }
    let id = tier ? this.byKey.get(key) : NO_CLASS;
    if (id !== undefined && id === previous) return previous;
    if (id === undefined) id = this.create(key, tier as number[]);
    if (id !== NO_CLASS) (this.classes[id] as PeerClass).users++;
    if (previous !== NO_CLASS) this.release(previous);
    return id;
  }

  /** Registers a tier table's group bitmaps; returns the number its block keeps. */
  register(groupBits: ReadonlyMap<number, Int32Array>, width: number): number {
    const map = new ClassMap(groupBits, width);
    const index = this.freeMaps.pop() ?? this.maps.length;
    this.maps[index] = map;
    const seen = new Set<number>();
    for (const group of groupBits.keys()) {
      let maps = this.mapsOfGroup.get(group);
      if (!maps) this.mapsOfGroup.set(group, (maps = new Set()));
      maps.add(index);
      for (const id of this.classesOfGroup.get(group) ?? []) {
        if (seen.has(id)) continue;
        seen.add(id);
        map.add(id, (this.classes[id] as PeerClass).groups);
      }
    }
    return index;
  }

  unregister(index: number): void {
    const map = this.maps[index];
    if (!map) return;
    for (const group of map.groupBits.keys()) {
      const maps = this.mapsOfGroup.get(group);
      maps?.delete(index);
      if (maps?.size === 0) this.mapsOfGroup.delete(group);
    }
    this.maps[index] = undefined;
    this.freeMaps.push(index);
  }

  private create(key: string, groups: number[]): number {
    const id = this.freeIds.pop() ?? this.classes.length;
    this.classes[id] = { key, groups, users: 0 };
    this.byKey.set(key, id);
    for (const index of this.mapsOf(groups)) (this.maps[index] as ClassMap).add(id, groups);
    for (const group of groups) {
      let ids = this.classesOfGroup.get(group);
      if (!ids) this.classesOfGroup.set(group, (ids = new Set()));
      ids.add(id);
    }
    return id;
  }

  private release(id: number): void {
    const entry = this.classes[id] as PeerClass;
    if (--entry.users > 0) return;
    this.byKey.delete(entry.key);
    for (const index of this.mapsOf(entry.groups)) (this.maps[index] as ClassMap).delete(id);
    for (const group of entry.groups) {
      const ids = this.classesOfGroup.get(group);
      ids?.delete(id);
      if (ids?.size === 0) this.classesOfGroup.delete(group);
    }
    this.classes[id] = undefined;
    this.freeIds.push(id);
  }

  /** The class maps of tables naming any of the groups, once each. */
  private mapsOf(groups: readonly number[]): Set<number> {
    const indexes = new Set<number>();
    for (const group of groups) for (const index of this.mapsOfGroup.get(group) ?? []) indexes.add(index);
    return indexes;
  }
}

function slotOf(key: number, mask: number): number {
  return Math.imul(key, 0x9e3779b1) >>> Math.clz32(mask);
}
