/**
 * The layout of an address record (address-records.ts): two halves of 8 ints at the same base
 * in two arrays. The hot half is what every lookup reads for both ends — key, tables, port
 * signatures, tier entry, peer class, node, flags; the cold half holds the groups and the node
 * address, read only by a lookup through a table with group entries (its address is known from
 * the base, so its miss overlaps the block header's) or against a node's address (a flag in
 * the hot half says so). Offsets are from a record's base; tables are block offsets, -1 when
 * absent.
 */

/** Ints per half; a record's base is its slot (or IPv6 record number) times this, in both arrays. */
export const STRIDE = 8;

// The hot half.
/**
 * Bits 0–1: the IPv4 slot's state (EMPTY or USED); bit 2: the address is an endpoint's; bit 3:
 * it is a node's address (NODE_ADDRESS_OF in the cold half is not 0); the bits above: its tier
 * peer class plus one (0: not classified yet; see tier-classes.ts) — kept here because a tier
 * lookup has the remote's hot half in hand already.
 */
export const STATE = 0;
export const STATE_MASK = 3;
export const EMPTY = 0;
export const USED = 1;
export const ENDPOINT_FLAG = 4;
export const NODE_ADDRESS_FLAG = 8;
const CLASS_SHIFT = 4;
const FLAGS_MASK = (1 << CLASS_SHIFT) - 1;
/** The IPv4 address (as a signed int). */
export const KEY = 1;
export const INGRESS = 2;
export const EGRESS = 3;
/**
 * Port signatures of the ingress and egress tables (see packed-tables.ts `portSignature`): a
 * port whose bit is clear is named by no rule of the table, so the packet is decided without
 * reading the table at all.
 */
export const INGRESS_PORTS = 4;
export const EGRESS_PORTS = 5;
/** Where the endpoint's cluster-policy tier tables are in the tier entries (-1: none). */
export const TIERS = 6;
/** The endpoint's node number (0: no endpoint or no node). */
export const ENDPOINT_NODE = 7;

// The cold half.
/** Where the tier group list is in the overflow arena, plus one (0: none): count, capacity, groups. */
export const TIER_LIST = 0;
/** The node number whose address this is (0: none; NODE_ADDRESS_FLAG in the hot half says so). */
export const NODE_ADDRESS_OF = 1;
/** How many groups the address is in; up to INLINE_GROUPS are at GROUPS, sorted. */
export const GROUP_COUNT = 2;
export const GROUPS = 3;
export const INLINE_GROUPS = 5;
/** With more groups: where the sorted list is in the overflow arena, and its capacity. */
export const OVERFLOW_AT = 3;
export const OVERFLOW_CAPACITY = 4;

/** Whether the record at `base` in `data` (a hot half) is a node's address. */
export function isNodeAddressAt(data: Int32Array, base: number): boolean {
  return ((data[base + STATE] as number) & NODE_ADDRESS_FLAG) !== 0;
}

/** The tier peer class of the record at `base` (-1: not classified yet). */
export function peerClassAt(data: Int32Array, base: number): number {
  return ((data[base + STATE] as number) >>> CLASS_SHIFT) - 1;
}

/** Classes up to 2^27 - 2 (tier-classes.ts renumbers them long before, at twice the records). */
export function setPeerClassAt(data: Int32Array, base: number, peerClass: number): void {
  const flags = (data[base + STATE] as number) & FLAGS_MASK;
  data[base + STATE] = ((peerClass + 1) << CLASS_SHIFT) | flags;
}

export function forgetClassAt(data: Int32Array, base: number): void {
  data[base + STATE] = (data[base + STATE] as number) & FLAGS_MASK;
}

/** Both halves of the record at `base` emptied: no tables, no groups, state EMPTY. */
export function clearRecord(data: Int32Array, cold: Int32Array, base: number): void {
  data.fill(0, base, base + STRIDE);
  cold.fill(0, base, base + STRIDE);
  data[base + INGRESS] = data[base + EGRESS] = data[base + TIERS] = -1;
}
