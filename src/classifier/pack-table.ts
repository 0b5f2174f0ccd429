/**
 * Packing a built table into its block (layout in packed-layout.ts): header, entry lists, then
 * the bitmaps, each after its summary words (one bit per non-zero word, for bitmaps wider than
 * one word). Entries point at a bitmap's first word; offsets are relative to the block's start.
 *
 * The port side is folded so that a lookup reads one port bitmap (the seed's "rules matching
 * the port"): an exact port's bitmap also holds the L3 rules, the protocol's any-port rules and
 * the ranges containing the port; the protocol's any-port entry holds the L3 rules; and the
 * ranges become disjoint segments, each with every range covering it, the L3 and any-port rules.
 * A lookup takes the exact entry, else the segment holding the port, else the any-port entry.
 */
import type { DirectionTable, PackView, RangeEntry } from './direction-table.ts';
import type { LpmTrie } from './lpm-trie.ts';
import {
  ACTION_AT,
  ANY,
  BITS,
  entryListLength,
  FEW_V4,
  GROUP_COUNT,
  HAS,
  HAS_GROUPS,
  HAS_HOSTS,
  HAS_PRIM_V4,
  HAS_RANGES,
  HAS_SUPP_V4,
  HAS_V6,
  HEADER,
  HOST_COUNT,
  L3,
  NONE,
  PORT_COUNT,
  pushEntries,
  RANGE_COUNT,
  SUMMARY,
  TRIE_V6,
  WIDTH,
} from './packed-layout.ts';

const MAPS = ['prim', 'supp', 'except'] as const;
const TRIE_V6_FIELDS = [TRIE_V6, TRIE_V6 + 1, TRIE_V6 + 2];

/**
 * The block of one table; `registerTrie` numbers the tries its big prefix maps stay in. With
 * `groupsElsewhere` (a tier table whose groups a class map answers), no group entries.
 */
export function packTable(
  table: DirectionTable,
  actions: Uint8Array | undefined,
  registerTrie: (trie: LpmTrie) => number,
  groupsElsewhere = false,
): Int32Array {
  const view = table.packView();
  const width = table.width;
  const summaries = width === 1 ? 0 : Math.ceil(width / 32);
  const stride = width + summaries;
  const folded = foldPorts(view, width);
  const bitmapCount = folded.bitmaps.length / width;
  const few = MAPS.map((map) => view.fewV4[map]);
  // Bitmap offsets are final once the entry lists' length is known.
  const listLength =
    entryListLength(view.ports.size) +
    4 * folded.segments.length +
    (groupsElsewhere ? 0 : entryListLength(view.groups.size)) +
    entryListLength(view.hostsV4.size) +
    few.reduce((sum, list) => sum + 3 * (list?.length ?? 0), 0) +
    (actions?.length ?? 0);
  const bits = HEADER + listLength;
  const bitmap = (offset: number): number => bits + (offset / width) * stride + summaries;
  const ports = [...view.ports].map(([key, offset]) => [key, bitmap(offset)] as const);
  const groups = groupsElsewhere
    ? []
    : [...view.groups].map(([group, offset]) => [group, bitmap(offset)] as const);
  const hosts = [...view.hostsV4].map(([address, offset]) => [address | 0, bitmap(offset)] as const);
  const optional = (offset: number | undefined): number => (offset === undefined ? NONE : bitmap(offset));

  const ints: number[] = new Array<number>(HEADER).fill(NONE);
  ints[WIDTH] = width;
  ints[BITS] = bits;
  ints[SUMMARY] = summaries;
  ints[L3] = optional(view.l3);
  folded.protocolAny.forEach((offset, p) => (ints[ANY + p] = optional(offset)));
  const list = (field: number, count: number): void => {
    ints[field] = count;
    ints[field + 1] = ints.length;
  };
  ints[PORT_COUNT] = ports.length;
  pushEntries(ints, ports); // at PORTS: nothing was pushed before
  list(RANGE_COUNT, folded.segments.length);
  for (const r of folded.segments) ints.push(r.protocol, r.from, r.to, bitmap(r.offset));
  list(GROUP_COUNT, groups.length);
  pushEntries(ints, groups);
  list(HOST_COUNT, hosts.length);
  pushEntries(ints, hosts);
  MAPS.forEach((map, m) => {
    const field = FEW_V4 + m * 3;
    const entries = few[m];
    const trie4 = view.tries[map][4];
    if (entries) {
      list(field, entries.length);
      for (const e of entries) ints.push(e.base | 0, e.mask | 0, bitmap(e.offset));
      ints[field + 2] = NONE;
    } else {
      ints[field] = 0;
      ints[field + 1] = 0;
      ints[field + 2] = trie4 ? registerTrie(trie4) : NONE;
    }
    const trie6 = view.tries[map][6];
    ints[TRIE_V6 + m] = trie6 ? registerTrie(trie6) : NONE;
  });
  const hasV4 = (m: number): boolean => (few[m]?.length ?? 0) > 0 || ints[FEW_V4 + m * 3 + 2] !== NONE;
  ints[HAS] =
    (folded.segments.length > 0 ? HAS_RANGES : 0) |
    (hasV4(0) ? HAS_PRIM_V4 : 0) |
    (hosts.length > 0 ? HAS_HOSTS : 0) |
    (hasV4(1) ? HAS_SUPP_V4 : 0) |
    (TRIE_V6_FIELDS.some((f) => ints[f] !== NONE) ? HAS_V6 : 0) |
    (groups.length > 0 ? HAS_GROUPS : 0);
  ints[ACTION_AT] = actions ? ints.length : NONE;
  if (actions) for (const action of actions) ints.push(action);

  const block = new Int32Array(bits + bitmapCount * stride);
  block.set(ints);
  for (let k = 0; k < bitmapCount; k++) {
    const at = bits + k * stride;
    for (let w = 0; w < width; w++) {
      const value = folded.bitmaps[k * width + w] as number;
      block[at + summaries + w] = value;
      if (summaries > 0 && value !== 0)
        block[at + (w >>> 5)] = (block[at + (w >>> 5)] as number) | (1 << (w & 31));
    }
  }
  return block;
}

/**
 * The port side folded (see the header): a copy of the builder's bitmaps in which exact ports
 * and any-port entries hold what else matches them, with one bitmap appended per range segment.
 * Offsets are the builder's (multiples of `width`); the builder's words are not changed.
 */
function foldPorts(
  view: PackView,
  width: number,
): { bitmaps: Int32Array; protocolAny: (number | undefined)[]; segments: RangeEntry[] } {
  const segmentList: { protocol: number; from: number; to: number; covering: number[] }[] = [];
  for (let protocol = 0; protocol < 3; protocol++) {
    const ranges = view.ranges.filter((r) => r.protocol === protocol);
    if (ranges.length === 0) continue;
    const bounds = [...new Set(ranges.flatMap((r) => [r.from, r.to + 1]))].sort((a, b) => a - b);
    for (let i = 0; i + 1 < bounds.length; i++) {
      const from = bounds[i] as number;
      const to = (bounds[i + 1] as number) - 1;
      const covering = ranges.filter((r) => r.from <= from && r.to >= to).map((r) => r.offset);
      if (covering.length > 0) segmentList.push({ protocol, from, to, covering });
    }
  }
  const bitmaps = new Int32Array(view.bitmaps.length + segmentList.length * width);
  bitmaps.set(view.bitmaps);
  const orInto = (target: number, source: number | undefined): void => {
    if (source === undefined) return;
    for (let w = 0; w < width; w++)
      bitmaps[target + w] = (bitmaps[target + w] as number) | (view.bitmaps[source + w] as number);
  };
  // The protocol's any-port entry (or the L3 bitmap itself, when the protocol has none).
  const protocolAny = view.protocolAny.map((offset) => offset ?? view.l3);
  view.protocolAny.forEach((offset) => offset !== undefined && orInto(offset, view.l3));
  const segments: RangeEntry[] = segmentList.map((segment, i) => {
    const offset = view.bitmaps.length + i * width;
    for (const covering of segment.covering) orInto(offset, covering);
    orInto(offset, view.protocolAny[segment.protocol]);
    orInto(offset, view.l3);
    return { protocol: segment.protocol, from: segment.from, to: segment.to, offset };
  });
  for (const [key, offset] of view.ports) {
    const protocol = key >>> 16;
    const port = key & 0xffff;
    orInto(offset, view.l3);
    orInto(offset, view.protocolAny[protocol]);
    for (const r of view.ranges)
      if (r.protocol === protocol && r.from <= port && port <= r.to) orInto(offset, r.offset);
  }
  return { bitmaps, protocolAny, segments };
}
