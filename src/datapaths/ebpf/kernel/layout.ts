/**
 * The eBPF datapath's map layout (bpf/palisade.h), field by field: names, key and value sizes,
 * flags, and the encoders and decoders of every key and value the renderer writes or reads back.
 * The loader checks each pinned map's key and value size against `MAP_SHAPES` before anything is
 * written, so a header and this file that drift apart fail with a message, not with wrong verdicts.
 */

export const LAYOUT_VERSION = 1;

export const FAMILY_V4 = 4;
const FAMILY_V6 = 6;

/** Table slots of a record, in palisade.h's order. */
export const T_INGRESS = 0;
export const T_EGRESS = 1;
export const T_ADMIN_INGRESS = 2;
export const T_ADMIN_EGRESS = 3;
export const T_BASELINE_INGRESS = 4;
export const T_BASELINE_EGRESS = 5;
export const TABLE_SLOTS = 6;

export const REC_ENDPOINT = 1;
/** Two-phase updates: the side must pass the previous policy's tables too (`restrictTables`). */
export const REC_RESTRICT = 2;
/** ... and this address's previous groups differ (held in chunks keyed with RESTRICT_CHUNK). */
export const REC_RESTRICT_GROUPS = 4;
export const RESTRICT_CHUNK = 0x80000000;
export const INLINE_GROUPS = 16;
export const GROUP_CHUNK = 32;
const MAX_GROUP_CHUNKS = 64;
/** The most groups of this node's tables one address may be in. */
export const MAX_GROUPS = INLINE_GROUPS + MAX_GROUP_CHUNKS * GROUP_CHUNK;
/** The most 64-bit words per summary bit the program visits (tables up to 4M slots). */
export const MAX_STRIDE = 1024;
/** Non-zero bitmap words an entry holds itself; a bitmap with more keeps the rest in `bits`. */
export const ENTRY_WORDS = 4;
const ENTRY_SIZE = 56;

export const HAS_PORTS = 1;
export const HAS_RANGES = 2;
export const HAS_CIDRS = 4;
export const HAS_GROUPS = 8;
export const HAS_SUPP = 16;
export const HAS_EXCEPT = 32;
export const TIER_TABLE = 64;

export const ACTION_ALLOW = 0;
export const ACTION_DENY = 1;
export const ACTION_PASS = 2;

export const CIDR_PRIM = 0;
export const CIDR_SUPP = 1;
export const CIDR_EXCEPT = 2;

export const CFG_ALLOW_NODE_LOCAL = 1;
export const CFG_RECHECK_FLOWS = 2;
/** Judge every first packet by the tables, never from the verdict cache (benchmarks measure judging with it). */
export const CFG_NO_VERDICT_CACHE = 4;
/** from_pod hands no verdict to to_pod (benchmarks compare each hook on its own with the hand-over). */
export const CFG_NO_HANDOFF = 8;
/** Nothing is delivered directly into a receiver's namespace (struct peer): every packet takes the host's path. */
export const CFG_NO_DIRECT = 16;
/** New connections' verdicts are counted in flow_counts0/1 (`--flow-log`; flow-events.ts). */
export const CFG_FLOW_EVENTS = 32;

export const DIR_EGRESS = 0;
export const DIR_INGRESS = 1;

/** Prefix bits of the LPM keys in front of the port or address. */
const RANGE_KEY_BITS = 40;
const CIDR_KEY_BITS = 48;

export type MapName =
  | 'gen'
  | 'config'
  | 'records'
  | 'record_groups'
  | 'tables'
  | 'ports'
  | 'ranges'
  | 'cidrs'
  | 'groups'
  | 'bits'
  | 'actions'
  | 'group_names'
  | 'conntrack'
  | 'frags'
  | 'peers'
  | 'verdicts'
  | 'handoffs'
  | 'judging'
  | 'scratch'
  | 'flow_counts0'
  | 'flow_counts1'
  | 'flow_active'
  | 'flow_budget';

/** struct flow_key and struct flow_count (bpf/palisade.h). */
export const FLOW_KEY_SIZE = 40;
export const FLOW_COUNT_SIZE = 32;
/** struct flow_budget (per CPU): the offsets of `lost` and of `made[2]`, and its size. */
export const FLOW_BUDGET_LOST = 12;
export const FLOW_BUDGET_MADE = 16;
export const FLOW_BUDGET_SIZE = 24;

/**
 * Key and value sizes in bytes, as bpf/palisade.h and bpf/maps.h define them. Every map the
 * program has is here, its own per-CPU working state too (`perCpu`: the verdict cache, the
 * hand-over slot, a judgement's inputs, a table lookup's state), which nothing outside the
 * program writes: a pinned node whose program came from another header differs there as well,
 * and is refused whole rather than half run.
 */
export const MAP_SHAPES: Readonly<
  Record<MapName, { readonly key: number; readonly value: number; readonly perCpu?: true }>
> = {
  gen: { key: 4, value: 4 },
  config: { key: 4, value: 4 },
  records: { key: 24, value: 132 },
  record_groups: { key: 28, value: 128 },
  tables: { key: 4, value: 16 + 4 * ENTRY_SIZE },
  ports: { key: 8, value: ENTRY_SIZE },
  ranges: { key: 12, value: ENTRY_SIZE },
  cidrs: { key: 28, value: ENTRY_SIZE },
  groups: { key: 8, value: ENTRY_SIZE },
  bits: { key: 12, value: 8 },
  actions: { key: 8, value: 4 },
  group_names: { key: 4, value: 16 },
  conntrack: { key: 40, value: 16 },
  frags: { key: 40, value: 8 },
  peers: { key: 20, value: 20 },
  verdicts: { key: 4, value: 64, perCpu: true },
  handoffs: { key: 4, value: 64, perCpu: true },
  judging: { key: 4, value: 88, perCpu: true },
  scratch: { key: 4, value: 1216, perCpu: true },
  // Drained by the flow reader (flow-events.ts) through its own descriptors.
  flow_counts0: { key: FLOW_KEY_SIZE, value: FLOW_COUNT_SIZE },
  flow_counts1: { key: FLOW_KEY_SIZE, value: FLOW_COUNT_SIZE },
  flow_active: { key: 4, value: 4 },
  flow_budget: { key: 4, value: FLOW_BUDGET_SIZE, perCpu: true },
};

export const MAP_NAMES = Object.keys(MAP_SHAPES) as readonly MapName[];

/** An address as keys hold it: family and 16 bytes (IPv4 in the first four). */
export interface AddressBytes {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

/** One non-zero word of a bitmap: its number and value. */
export interface BitmapWord {
  readonly at: number;
  readonly value: bigint;
}

/**
 * A bitmap entry's value: the summary, the first ENTRY_WORDS non-zero words (ascending), how many
 * non-zero words the bitmap has, and its number in the table (for the words in `bits` when it
 * has more than the entry holds).
 */
export interface EntryValue {
  readonly summary: bigint;
  readonly words: readonly BitmapWord[];
  readonly count: number;
  readonly index: number;
}

export interface RecordValue {
  readonly flags: number;
  readonly node: number;
  readonly nodeAddressOf: number;
  readonly groupCount: number;
  /** TABLE_SLOTS table ids (0: none). */
  readonly tables: readonly number[];
  /** The first INLINE_GROUPS group ids. */
  readonly groups: readonly number[];
  /** The previous policy's table ids (with REC_RESTRICT). */
  readonly restrictTables?: readonly number[];
  /** How many previous groups (with REC_RESTRICT_GROUPS). */
  readonly restrictGroupCount?: number;
}

export interface TableHeader {
  readonly words: number;
  readonly stride: number;
  readonly flags: number;
  readonly slots: number;
  readonly l3: EntryValue;
  readonly any: readonly [EntryValue, EntryValue, EntryValue];
}

const EMPTY_ENTRY: EntryValue = { summary: 0n, words: [], count: 0, index: 0 };

export function emptyEntry(): EntryValue {
  return EMPTY_ENTRY;
}

function putAddress(buffer: Buffer, at: number, address: AddressBytes): void {
  buffer.set(address.bytes.subarray(0, 16), at);
}

export function addressKey(side: number, address: AddressBytes): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(side, 0);
  b.writeUInt32LE(address.family, 4);
  putAddress(b, 8, address);
  return b;
}

export function decodeAddressKey(b: Buffer): { side: number; address: AddressBytes } {
  const family = b.readUInt32LE(4) === FAMILY_V6 ? 6 : 4;
  return { side: b.readUInt32LE(0), address: { family, bytes: new Uint8Array(b.subarray(8, 24)) } };
}

/** A local pod's address in `peers` (struct peer_key). */
export function peerKey(address: AddressBytes): Buffer {
  const b = Buffer.alloc(20);
  b.writeUInt32LE(address.family, 0);
  putAddress(b, 4, address);
  return b;
}

/** A `peers` value read back (struct peer). */
export function decodePeer(b: Buffer): { ifindex: number; podMac: Buffer; hostMac: Buffer; epoch: number } {
  return {
    ifindex: b.readUInt32LE(0),
    podMac: Buffer.from(b.subarray(4, 10)),
    hostMac: Buffer.from(b.subarray(10, 16)),
    epoch: b.readUInt32LE(16),
  };
}

export function recordValue(r: RecordValue): Buffer {
  const b = Buffer.alloc(MAP_SHAPES.records.value);
  b.writeUInt32LE(r.flags, 0);
  b.writeUInt32LE(r.node, 4);
  b.writeUInt32LE(r.nodeAddressOf, 8);
  b.writeUInt32LE(r.groupCount, 12);
  for (let i = 0; i < TABLE_SLOTS; i++) b.writeUInt32LE(r.tables[i] ?? 0, 16 + 4 * i);
  for (let i = 0; i < INLINE_GROUPS; i++) b.writeUInt32LE(r.groups[i] ?? 0, 40 + 4 * i);
  for (let i = 0; i < TABLE_SLOTS; i++) b.writeUInt32LE(r.restrictTables?.[i] ?? 0, 104 + 4 * i);
  b.writeUInt32LE(r.restrictGroupCount ?? 0, 128);
  return b;
}

export function decodeRecord(b: Buffer): RecordValue {
  const tables: number[] = [];
  for (let i = 0; i < TABLE_SLOTS; i++) tables.push(b.readUInt32LE(16 + 4 * i));
  const groupCount = b.readUInt32LE(12);
  const groups: number[] = [];
  for (let i = 0; i < Math.min(groupCount, INLINE_GROUPS); i++) groups.push(b.readUInt32LE(40 + 4 * i));
  const restrictTables: number[] = [];
  for (let i = 0; i < TABLE_SLOTS; i++) restrictTables.push(b.readUInt32LE(104 + 4 * i));
  return {
    flags: b.readUInt32LE(0),
    node: b.readUInt32LE(4),
    nodeAddressOf: b.readUInt32LE(8),
    groupCount,
    tables,
    groups,
    restrictTables,
    restrictGroupCount: b.readUInt32LE(128),
  };
}

export function groupChunkKey(side: number, address: AddressBytes, chunk: number): Buffer {
  const b = Buffer.alloc(28);
  addressKey(side, address).copy(b, 0);
  b.writeUInt32LE(chunk, 24);
  return b;
}

export function decodeGroupChunkKey(b: Buffer): { side: number; address: AddressBytes; chunk: number } {
  return { ...decodeAddressKey(b.subarray(0, 24)), chunk: b.readUInt32LE(24) };
}

export function groupChunkValue(groups: readonly number[]): Buffer {
  const b = Buffer.alloc(128);
  groups.forEach((g, i) => b.writeUInt32LE(g, 4 * i));
  return b;
}

export function decodeGroupChunk(b: Buffer, count: number): number[] {
  const groups: number[] = [];
  for (let i = 0; i < count; i++) groups.push(b.readUInt32LE(4 * i));
  return groups;
}

// struct entry: summary, w[ENTRY_WORDS], at[ENTRY_WORDS] (u16), count, index.
const W_AT = 8;
const AT_AT = W_AT + 8 * ENTRY_WORDS;
const COUNT_AT = AT_AT + 2 * ENTRY_WORDS;

function writeEntry(b: Buffer, at: number, e: EntryValue): void {
  b.writeBigUInt64LE(e.summary, at);
  e.words.slice(0, ENTRY_WORDS).forEach((w, j) => {
    b.writeBigUInt64LE(w.value, at + W_AT + 8 * j);
    b.writeUInt16LE(w.at, at + AT_AT + 2 * j);
  });
  b.writeUInt32LE(e.count, at + COUNT_AT);
  b.writeUInt32LE(e.index, at + COUNT_AT + 4);
}

function readEntry(b: Buffer, at: number): EntryValue {
  const count = b.readUInt32LE(at + COUNT_AT);
  const words: BitmapWord[] = [];
  for (let j = 0; j < Math.min(count, ENTRY_WORDS); j++)
    words.push({ at: b.readUInt16LE(at + AT_AT + 2 * j), value: b.readBigUInt64LE(at + W_AT + 8 * j) });
  return { summary: b.readBigUInt64LE(at), words, count, index: b.readUInt32LE(at + COUNT_AT + 4) };
}

export function entryValue(e: EntryValue): Buffer {
  const b = Buffer.alloc(ENTRY_SIZE);
  writeEntry(b, 0, e);
  return b;
}

export function decodeEntry(b: Buffer): EntryValue {
  return readEntry(b, 0);
}

export function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

export function tableValue(t: TableHeader): Buffer {
  const b = Buffer.alloc(MAP_SHAPES.tables.value);
  b.writeUInt32LE(t.words, 0);
  b.writeUInt32LE(t.stride, 4);
  b.writeUInt32LE(t.flags, 8);
  b.writeUInt32LE(t.slots, 12);
  writeEntry(b, 16, t.l3);
  t.any.forEach((e, i) => writeEntry(b, 16 + ENTRY_SIZE * (i + 1), e));
  return b;
}

export function decodeTable(b: Buffer): TableHeader {
  return {
    words: b.readUInt32LE(0),
    stride: b.readUInt32LE(4),
    flags: b.readUInt32LE(8),
    slots: b.readUInt32LE(12),
    l3: readEntry(b, 16),
    any: [
      readEntry(b, 16 + ENTRY_SIZE),
      readEntry(b, 16 + 2 * ENTRY_SIZE),
      readEntry(b, 16 + 3 * ENTRY_SIZE),
    ],
  };
}

export function portKey(table: number, protocol: number, port: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(table, 0);
  b.writeUInt16LE(port, 4);
  b.writeUInt8(protocol, 6);
  return b;
}

export function decodePortKey(b: Buffer): { table: number; protocol: number; port: number } {
  return { table: b.readUInt32LE(0), port: b.readUInt16LE(4), protocol: b.readUInt8(6) };
}

/** A port-range trie key: `prefix` leading bits of `port` (0–16). */
export function rangeKey(table: number, protocol: number, port: number, prefix: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32LE(RANGE_KEY_BITS + prefix, 0);
  b.writeUInt32LE(table, 4);
  b.writeUInt8(protocol, 8);
  b.writeUInt16BE(port, 9);
  return b;
}

export function decodeRangeKey(b: Buffer): { table: number; protocol: number; port: number; prefix: number } {
  return {
    prefix: b.readUInt32LE(0) - RANGE_KEY_BITS,
    table: b.readUInt32LE(4),
    protocol: b.readUInt8(8),
    port: b.readUInt16BE(9),
  };
}

/** A CIDR trie key: the table, map kind (prim, supp, except) and prefix. */
export function cidrKey(table: number, kind: number, address: AddressBytes, prefix: number): Buffer {
  const b = Buffer.alloc(28);
  b.writeUInt32LE(CIDR_KEY_BITS + prefix, 0);
  b.writeUInt32LE(table, 4);
  b.writeUInt8(kind, 8);
  b.writeUInt8(address.family, 9);
  putAddress(b, 10, address);
  return b;
}

export function decodeCidrKey(b: Buffer): {
  table: number;
  kind: number;
  address: AddressBytes;
  prefix: number;
} {
  const family = b.readUInt8(9) === FAMILY_V6 ? 6 : 4;
  return {
    prefix: b.readUInt32LE(0) - CIDR_KEY_BITS,
    table: b.readUInt32LE(4),
    kind: b.readUInt8(8),
    address: { family, bytes: new Uint8Array(b.subarray(10, 26)) },
  };
}

export function pairKey(a: number, b: number): Buffer {
  const k = Buffer.alloc(8);
  k.writeUInt32LE(a, 0);
  k.writeUInt32LE(b, 4);
  return k;
}

export function decodePairKey(k: Buffer): [number, number] {
  return [k.readUInt32LE(0), k.readUInt32LE(4)];
}

export function bitsKey(table: number, index: number, word: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32LE(table, 0);
  b.writeUInt32LE(index, 4);
  b.writeUInt32LE(word, 8);
  return b;
}

export function decodeBitsKey(b: Buffer): { table: number; index: number; word: number } {
  return { table: b.readUInt32LE(0), index: b.readUInt32LE(4), word: b.readUInt32LE(8) };
}

export function u64(value: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(value, 0);
  return b;
}

/**
 * A connection-tracking key, as the program writes it (for tests that look entries up): the
 * connection's two ends in the program's canonical order (local_first in bpf/conntrack.h: the
 * address's two 8-byte halves as little-endian numbers, then the port), so every packet of a
 * connection, either way and at either end's hooks, shares one key. `end` is the local end's
 * index in the value's sides.
 */
export function ctKey(
  ipProtocol: number,
  local: AddressBytes,
  remote: AddressBytes,
  localPort: number,
  remotePort: number,
): { key: Buffer; end: 0 | 1 } {
  const l = Buffer.alloc(16);
  const r = Buffer.alloc(16);
  l.set(local.bytes.subarray(0, 16));
  r.set(remote.bytes.subarray(0, 16));
  const order = (x: Buffer, y: Buffer): number => {
    for (const at of [0, 8]) {
      const a = x.readBigUInt64LE(at);
      const b = y.readBigUInt64LE(at);
      if (a !== b) return a < b ? -1 : 1;
    }
    return 0;
  };
  const c = order(l, r);
  const end = c < 0 || (c === 0 && localPort <= remotePort) ? 0 : 1;
  const b = Buffer.alloc(40);
  b.writeUInt8(ipProtocol, 0);
  b.writeUInt8(local.family, 1);
  b.writeUInt16LE(end === 0 ? localPort : remotePort, 2);
  b.writeUInt16LE(end === 0 ? remotePort : localPort, 4);
  b.set(end === 0 ? l : r, 8);
  b.set(end === 0 ? r : l, 24);
  return { key: b, end };
}

/** One end's side of a connection-tracking value (undefined: that end has not judged it). */
export function decodeCtSide(
  b: Buffer,
  end: 0 | 1,
): { epoch: number; allowed: boolean; direction: number; host: number } | undefined {
  const at = 8 * end;
  if (b.readUInt8(at + 6) === 0) return undefined;
  return {
    epoch: b.readUInt32LE(at),
    allowed: b.readUInt8(at + 4) !== 0,
    direction: b.readUInt8(at + 5),
    host: b.readUInt8(at + 7),
  };
}
