/**
 * The layout of a packed table block (see table-arena.ts): header fields, the flags of the
 * sections a table has, and the (key, value) entry lists — scanned when short, hashed in place
 * when long — that the packer writes and the lookup reads.
 */

// Block layout. Offsets inside a block are relative to its start (blocks move). A short hot
// header holds what a lookup reads first, the port entries follow it and the group entries
// follow them, so a NetworkPolicy block of shape (a) — a few ports and groups — is read in one
// or two cache lines whose addresses are known from the block's offset alone. The cold header
// (ranges, hosts, prefix lists, tries, tier actions, where the bitmaps are) comes after the group
// entries; lookups read it only when the hot header's flags say those sections exist.
/** HAS_* bits, NARROW, and the bitmaps' width in words above WIDTH_SHIFT. */
export const FLAGS = 0;
export const WIDTH_SHIFT = 8;
export const PORT_COUNT = 1;
export const L3 = 2;
export const ANY = 3; // three: TCP, UDP, SCTP
export const GROUP_COUNT = 6;
/** Where the cold header is. */
export const COLD_AT = 7;
export const HEADER = 8;
/** The port entries: always first after the hot header; the group entries right after them. */
export const PORTS = HEADER;

// Cold header fields, relative to the cold header (COLD_AT). Ranges follow it directly.
export const RANGE_COUNT = 0;
export const HOST_COUNT = 1;
export const HOST_AT = 2;
export const FEW_V4 = 3; // per map (prim, supp, except): count, at, trie (or -1)
export const TRIE_V6 = 12; // per map: trie (or -1)
export const ACTION_AT = 15;
/** Where the bitmaps start; trie values (the builder's offsets) are mapped from there. */
export const BITS = 16;
/** Summary words in front of each bitmap (0 for one-word bitmaps). */
export const SUMMARY = 17;
export const COLD_FIELDS = 18;
export const RANGE_AT = COLD_FIELDS;

export const HAS_RANGES = 1;
export const HAS_PRIM_V4 = 2;
export const HAS_HOSTS = 4;
export const HAS_SUPP_V4 = 8;
export const HAS_V6 = 16;
export const HAS_GROUPS = 32;
/**
 * One-word bitmaps (tables of up to 32 slots — every NetworkPolicy table of shape (a)): every
 * entry and header field holds the bitmap word itself instead of its offset, 0 for none, so a
 * lookup reads no bitmap after its entries (for tries, which hold builder offsets, it still does).
 */
export const NARROW = 64;

export const NONE = -1;
/** Where the group entries start: right after the port entries. */
export function groupEntriesAt(portCount: number): number {
  return PORTS + entryListLength(portCount);
}

/** Entry lists longer than this are hashed (see findEntry). */
export const SCAN = 8;

/**
 * The value of a key in a (key, value) entry list of `count` entries at `at`, or `missing`
 * (NONE in wide blocks, whose values are offsets; 0 in narrow ones, whose values are bitmap
 * words and which hold no entry whose word is 0). Short lists are scanned; longer ones are
 * open-addressing hash tables of twice the size (a power of two), empty slots holding value
 * `missing`: one or two probes, where a binary search over a thousand ports cost ten
 * unpredictable branches.
 */
export function findEntry(data: Int32Array, at: number, count: number, key: number, missing: number): number {
  if (count <= SCAN) {
    for (let i = 0; i < count; i++, at += 2) if (data[at] === key) return data[at + 1] as number;
    return missing;
  }
  const bits = hashBits(count);
  const mask = (1 << bits) - 1;
  for (let slot = hashSlot(key, bits); ; slot = (slot + 1) & mask) {
    const value = data[at + 2 * slot + 1] as number;
    if (value === missing || data[at + 2 * slot] === key) return value;
  }
}

/** Bits of a hashed list's slot count: at least twice the entries. */
export function hashBits(count: number): number {
  return 32 - Math.clz32(2 * count - 1);
}

function hashSlot(key: number, bits: number): number {
  return Math.imul(key, 0x9e3779b1) >>> (32 - bits);
}

/** Ints an entry list of `count` entries takes. */
export function entryListLength(count: number): number {
  return count <= SCAN ? 2 * count : 2 << hashBits(count);
}

/** Appends an entry list (scanned or hashed, see findEntry; `missing` marks empty slots). */
export function pushEntries(
  ints: number[],
  entries: readonly (readonly [number, number])[],
  missing: number,
): void {
  if (entries.length <= SCAN) {
    for (const [key, value] of entries) ints.push(key, value);
    return;
  }
  const bits = hashBits(entries.length);
  const mask = (1 << bits) - 1;
  const table = new Array<number>(2 << bits).fill(missing);
  for (const [key, value] of entries) {
    let slot = hashSlot(key, bits);
    while (table[2 * slot + 1] !== missing) slot = (slot + 1) & mask;
    table[2 * slot] = key;
    table[2 * slot + 1] = value;
  }
  for (const value of table) ints.push(value);
}

/** The bit of a packet's protocol (index) and port in a port signature. */
export function portBit(protocol: number, port: number): number {
  return portBitOfKey((protocol << 16) | port);
}

export function portBitOfKey(key: number): number {
  return 1 << (Math.imul(key, 0x9e3779b1) >>> 27);
}
