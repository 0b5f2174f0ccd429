/**
 * One classifier table (a NetworkPolicy DirectionTable, or a tier table with its slot actions) as
 * the entries the BPF maps hold, and its content key.
 *
 * The classifier's tries collect every stored prefix on an address's path; a BPF LPM trie returns
 * only the longest. So each stored CIDR carries the union of the bitmaps of every prefix of its
 * map (and family) that contains it — the longest match then is the union the classifier
 * collects. Port ranges, which the classifier scans, become disjoint intervals (each with the
 * union of the ranges covering it) split into aligned port prefixes: one trie lookup per packet.
 *
 * The key hashes the entries in a canonical order, with groups named by a hash of their
 * reference: the same form readback reconstructs from the kernel, so tables match across
 * processes by content.
 */
import { createHash } from 'node:crypto';
import { parseCidr, type IpFamily } from '../../net/ip.ts';
import type { DirectionTable } from '../../classifier/index.ts';
import { EbpfError, layout } from './kernel/index.ts';
import {
  bitmapFrom,
  emptyBitmap,
  isEmpty,
  MAX_WORDS,
  orInto,
  sameBits,
  strideFor,
  wordsFor,
} from './bitmaps.ts';

interface PortEntry {
  readonly protocol: number;
  readonly port: number;
  readonly bitmap: Uint32Array;
}

/** An aligned block of ports: the `prefix` leading bits of `port` (16: one port). */
interface RangeEntry {
  readonly protocol: number;
  readonly port: number;
  readonly prefix: number;
  readonly bitmap: Uint32Array;
}

interface CidrEntry {
  readonly kind: number;
  readonly family: IpFamily;
  readonly base: bigint;
  readonly prefix: number;
  readonly bitmap: Uint32Array;
}

interface GroupEntry {
  /** Hex of the reference's hash, what the kernel's group_names map holds. */
  readonly hash: string;
  /** The group reference (absent for tables read back from the kernel). */
  readonly reference?: string;
  readonly bitmap: Uint32Array;
}

export interface TableEntries {
  readonly key: string;
  readonly slots: number;
  readonly words: number;
  readonly stride: number;
  readonly flags: number;
  readonly l3: Uint32Array | undefined;
  /** Every port of TCP, UDP, SCTP. */
  readonly any: readonly (Uint32Array | undefined)[];
  readonly ports: readonly PortEntry[];
  readonly ranges: readonly RangeEntry[];
  readonly cidrs: readonly CidrEntry[];
  readonly groups: readonly GroupEntry[];
  /** Tier tables: slots whose action is not allow. */
  readonly actions: readonly { readonly slot: number; readonly action: number }[];
  /** What each slot stands for (printing only; not in the kernel). */
  readonly labels: readonly string[];
}

const CIDR_KINDS = { prim: layout.CIDR_PRIM, supp: layout.CIDR_SUPP, except: layout.CIDR_EXCEPT } as const;

/** The 16-byte hash (hex) a group reference is known by in the kernel. */
export function referenceHash(reference: string): string {
  return createHash('sha256').update(reference).digest('hex').slice(0, 32);
}

/** A classifier table's entries; `actions` (per slot) makes it a tier table. */
export function tableEntries(table: DirectionTable, actions?: Uint8Array): TableEntries {
  const words = wordsFor(table.slots);
  // Before any bitmap of that width is allocated.
  refuseWidth(table.slots, words);
  const bitmap = (offset: number): Uint32Array => bitmapFrom(table.store.words, offset, table.width, words);
  const ports: PortEntry[] = [...table.ports].map(([key, offset]) => ({
    protocol: key >>> 16,
    port: key & 0xffff,
    bitmap: bitmap(offset),
  }));
  const ranges = mergeRanges(
    table.ranges.map((r) => ({ protocol: r.protocol, from: r.from, to: r.to, bitmap: bitmap(r.offset) })),
    words,
  );
  const stored: CidrEntry[] = [];
  for (const [name, kind] of Object.entries(CIDR_KINDS))
    for (const [text, offset] of table.prefixes[name as keyof typeof CIDR_KINDS]) {
      const parsed = parseCidr(text);
      if (!parsed.ok) throw new Error(`unreachable: the classifier stored an invalid prefix ${text}`);
      const { family, base, prefix } = parsed.value;
      stored.push({ kind, family, base, prefix, bitmap: bitmap(offset) });
    }
  const groups: GroupEntry[] = (table.groupEntries() ?? []).map(([reference, offset]) => ({
    hash: referenceHash(reference),
    reference,
    bitmap: bitmap(offset),
  }));
  const slotActions: { slot: number; action: number }[] = [];
  actions?.forEach((action, slot) => {
    if (action !== layout.ACTION_ALLOW) slotActions.push({ slot, action });
  });
  return finish({
    slots: table.slots,
    words,
    l3: table.l3 === undefined ? undefined : bitmap(table.l3),
    any: table.protocolAny.map((offset) => (offset === undefined ? undefined : bitmap(offset))),
    ports,
    ranges,
    cidrs: mergeCidrs(stored),
    groups,
    actions: slotActions,
    labels: [...table.labels],
    tier: actions !== undefined,
  });
}

/** The entries with their flags, stride and content key. */
export function finish(
  entries: Omit<TableEntries, 'key' | 'flags' | 'stride'> & { tier: boolean },
): TableEntries {
  const { tier, ...rest } = entries;
  refuseWidth(rest.slots, rest.words);
  let flags = tier ? layout.TIER_TABLE : 0;
  if (rest.ports.length > 0) flags |= layout.HAS_PORTS;
  if (rest.ranges.length > 0) flags |= layout.HAS_RANGES;
  if (rest.cidrs.length > 0) flags |= layout.HAS_CIDRS;
  if (rest.cidrs.some((c) => c.kind === layout.CIDR_SUPP)) flags |= layout.HAS_SUPP;
  if (rest.cidrs.some((c) => c.kind === layout.CIDR_EXCEPT)) flags |= layout.HAS_EXCEPT;
  if (rest.groups.length > 0) flags |= layout.HAS_GROUPS;
  const sorted: Omit<TableEntries, 'key'> = {
    ...rest,
    flags,
    stride: strideFor(rest.words),
    ports: [...rest.ports].sort((a, b) => a.protocol - b.protocol || a.port - b.port),
    ranges: [...rest.ranges].sort(
      (a, b) => a.protocol - b.protocol || a.port - b.port || a.prefix - b.prefix,
    ),
    cidrs: [...rest.cidrs].sort(
      (a, b) =>
        a.kind - b.kind ||
        a.family - b.family ||
        (a.base < b.base ? -1 : a.base > b.base ? 1 : 0) ||
        a.prefix - b.prefix,
    ),
    groups: [...rest.groups].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0)),
    actions: [...rest.actions].sort((a, b) => a.slot - b.slot),
  };
  return { ...sorted, key: contentKey(sorted) };
}

/** A table wider than the maps encode is an error the user sees in one line (EbpfError). */
function refuseWidth(slots: number, words: number): void {
  if (words > MAX_WORDS)
    throw new EbpfError(
      `an endpoint's table on this node has ${slots.toLocaleString('en')} rule slots (${words.toLocaleString('en')} 64-bit words per bitmap); the eBPF datapath encodes at most ${(MAX_WORDS * 64).toLocaleString('en')} (${MAX_WORDS.toLocaleString('en')} words)`,
    );
}

function contentKey(t: Omit<TableEntries, 'key'>): string {
  const h = createHash('sha256');
  const bits = (b: Uint32Array | undefined): void => {
    h.update(b && !isEmpty(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : NONE);
  };
  h.update(`${t.slots}|${t.words}|${t.flags}\n`);
  bits(t.l3);
  for (const b of t.any) bits(b);
  for (const p of t.ports) {
    h.update(`p${p.protocol}:${p.port}=`);
    bits(p.bitmap);
  }
  for (const r of t.ranges) {
    h.update(`r${r.protocol}:${r.port}/${r.prefix}=`);
    bits(r.bitmap);
  }
  for (const c of t.cidrs) {
    h.update(`c${c.kind}:${c.family}:${c.base.toString(16)}/${c.prefix}=`);
    bits(c.bitmap);
  }
  for (const g of t.groups) {
    h.update(`g${g.hash}=`);
    bits(g.bitmap);
  }
  for (const a of t.actions) h.update(`a${a.slot}=${a.action}\n`);
  return h.digest('hex').slice(0, 32);
}

const NONE = new Uint8Array([0xff]);

/**
 * Each stored prefix with the union of every prefix of its kind and family containing it, so
 * that a longest-prefix match gives what the classifier collects along the path.
 */
function mergeCidrs(stored: readonly CidrEntry[]): CidrEntry[] {
  const byPrefix = new Map<string, CidrEntry>();
  const id = (kind: number, family: number, base: bigint, prefix: number) =>
    `${kind}|${family}|${base}|${prefix}`;
  for (const c of stored) {
    const at = id(c.kind, c.family, c.base, c.prefix);
    const known = byPrefix.get(at);
    if (known) orInto(known.bitmap, c.bitmap);
    else byPrefix.set(at, { ...c, bitmap: c.bitmap.slice() });
  }
  const merged: CidrEntry[] = [];
  for (const c of byPrefix.values()) {
    const bitmap = c.bitmap.slice();
    const bits = c.family === 4 ? 32 : 128;
    for (let prefix = c.prefix - 1; prefix >= 0; prefix--) {
      const hostBits = BigInt(bits - prefix);
      const outer = byPrefix.get(id(c.kind, c.family, (c.base >> hostBits) << hostBits, prefix));
      if (outer) orInto(bitmap, outer.bitmap);
    }
    merged.push({ ...c, bitmap });
  }
  return merged;
}

/**
 * Port ranges (inclusive) as aligned prefixes of disjoint intervals, each interval carrying the
 * union of the ranges that cover it.
 */
function mergeRanges(
  ranges: readonly { protocol: number; from: number; to: number; bitmap: Uint32Array }[],
  words: number,
): RangeEntry[] {
  const out: RangeEntry[] = [];
  for (const protocol of new Set(ranges.map((r) => r.protocol))) {
    const mine = ranges.filter((r) => r.protocol === protocol);
    const bounds = [...new Set(mine.flatMap((r) => [r.from, r.to + 1]))].sort((a, b) => a - b);
    let open: { from: number; to: number; bitmap: Uint32Array } | undefined;
    const intervals: { from: number; to: number; bitmap: Uint32Array }[] = [];
    for (let i = 0; i + 1 < bounds.length; i++) {
      const from = bounds[i] as number;
      const to = (bounds[i + 1] as number) - 1;
      const bitmap = emptyBitmap(words);
      for (const r of mine) if (r.from <= from && to <= r.to) orInto(bitmap, r.bitmap);
      if (isEmpty(bitmap)) {
        open = undefined;
        continue;
      }
      // Adjacent intervals with the same slots are one.
      if (open && open.to + 1 === from && sameBits(open.bitmap, bitmap)) open.to = to;
      else intervals.push((open = { from, to, bitmap }));
    }
    for (const { from, to, bitmap } of intervals)
      for (let lo = from; lo <= to;) {
        let size = 1;
        while (size < 65536 && lo % (size * 2) === 0 && lo + size * 2 - 1 <= to) size *= 2;
        out.push({ protocol, port: lo, prefix: 16 - Math.log2(size), bitmap });
        lo += size;
      }
  }
  return out;
}
