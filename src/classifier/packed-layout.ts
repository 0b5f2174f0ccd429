/**
 * The layout of a packed table block (see packed-tables.ts): header fields, the flags of the
 * sections a table has, and the (key, value) entry lists — scanned when short, hashed in place
 * when long — that the packer writes and the lookup reads.
 */

// Block header fields; offsets inside a block are relative to its start (blocks move). What the
// port check reads comes first, and the port entries follow the header at a fixed place, so
// their cache line is fetched as soon as the block's address is known.
export const WIDTH = 0;
export const L3 = 1;
export const ANY = 2; // three: TCP, UDP, SCTP
export const PORT_COUNT = 5;
/** Which sections the table has (HAS_* bits): a lookup skips the others without reading them. */
export const HAS = 6;
export const RANGE_COUNT = 7;
export const RANGE_AT = 8;
export const GROUP_COUNT = 9;
export const GROUP_AT = 10;
export const HOST_COUNT = 11;
export const HOST_AT = 12;
export const FEW_V4 = 13; // per map (prim, supp, except): count, at, trie (or -1)
export const TRIE_V6 = 22; // per map: trie (or -1)
export const ACTION_AT = 25;
/** Where the bitmaps start; trie values (the builder's offsets) are mapped from there. */
export const BITS = 26;
/** Summary words in front of each bitmap (0 for one-word bitmaps). */
export const SUMMARY = 27;
export const HEADER = 28;
/** The port entries: always first after the header. */
export const PORTS = HEADER;

export const HAS_RANGES = 1;
export const HAS_PRIM_V4 = 2;
export const HAS_HOSTS = 4;
export const HAS_SUPP_V4 = 8;
export const HAS_V6 = 16;
export const HAS_GROUPS = 32;

export const NONE = -1;
/** Entry lists longer than this are hashed (see findEntry). */
export const SCAN = 8;

/**
 * The value of a key in a (key, value) entry list of `count` entries at `at`, or NONE. Short
 * lists are scanned; longer ones are open-addressing hash tables of twice the size (a power of
 * two), empty slots holding value NONE: one or two probes, where a binary search over a
 * thousand ports cost ten unpredictable branches.
 */
export function findEntry(data: Int32Array, at: number, count: number, key: number): number {
  if (count <= SCAN) {
    for (let i = 0; i < count; i++, at += 2) if (data[at] === key) return data[at + 1] as number;
    return NONE;
  }
  const bits = hashBits(count);
  const mask = (1 << bits) - 1;
  for (let slot = hashSlot(key, bits); ; slot = (slot + 1) & mask) {
    const value = data[at + 2 * slot + 1] as number;
    if (value === NONE || data[at + 2 * slot] === key) return value;
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

/** Appends an entry list (scanned or hashed, see findEntry). */
export function pushEntries(ints: number[], entries: readonly (readonly [number, number])[]): void {
  if (entries.length <= SCAN) {
    for (const [key, value] of entries) ints.push(key, value);
    return;
  }
  const bits = hashBits(entries.length);
  const mask = (1 << bits) - 1;
  const table = new Array<number>(2 << bits).fill(NONE);
  for (const [key, value] of entries) {
    let slot = hashSlot(key, bits);
    while (table[2 * slot + 1] !== NONE) slot = (slot + 1) & mask;
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
