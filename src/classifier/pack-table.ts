/**
 * Packing a built table into its block (layout in packed-layout.ts): header, entry lists, then
 * the bitmaps, each after its summary words (one bit per non-zero word, for bitmaps wider than
 * one word). Entries point at a bitmap's first word; offsets are relative to the block's start.
 */
import type { DirectionTable } from './direction-table.ts';
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

/** The block of one table; `registerTrie` numbers the tries its big prefix maps stay in. */
export function packTable(
  table: DirectionTable,
  actions: Uint8Array | undefined,
  registerTrie: (trie: LpmTrie) => number,
): Int32Array {
  const view = table.packView();
  const width = table.width;
  const summaries = width === 1 ? 0 : Math.ceil(width / 32);
  const stride = width + summaries;
  const bitmapCount = view.bitmaps.length / width;
  const few = MAPS.map((map) => view.fewV4[map]);
  // Bitmap offsets are final once the entry lists' length is known.
  const listLength =
    entryListLength(view.ports.size) +
    4 * view.ranges.length +
    entryListLength(view.groups.size) +
    entryListLength(view.hostsV4.size) +
    few.reduce((sum, list) => sum + 3 * (list?.length ?? 0), 0) +
    (actions?.length ?? 0);
  const bits = HEADER + listLength;
  const bitmap = (offset: number): number => bits + (offset / width) * stride + summaries;
  const ports = [...view.ports].map(([key, offset]) => [key, bitmap(offset)] as const);
  const groups = [...view.groups].map(([group, offset]) => [group, bitmap(offset)] as const);
  const hosts = [...view.hostsV4].map(([address, offset]) => [address | 0, bitmap(offset)] as const);
  const optional = (offset: number | undefined): number => (offset === undefined ? NONE : bitmap(offset));

  const ints: number[] = new Array<number>(HEADER).fill(NONE);
  ints[WIDTH] = width;
  ints[BITS] = bits;
  ints[SUMMARY] = summaries;
  ints[L3] = optional(view.l3);
  view.protocolAny.forEach((offset, p) => (ints[ANY + p] = optional(offset)));
  const list = (field: number, count: number): void => {
    ints[field] = count;
    ints[field + 1] = ints.length;
  };
  ints[PORT_COUNT] = ports.length;
  pushEntries(ints, ports); // at PORTS: nothing was pushed before
  list(RANGE_COUNT, view.ranges.length);
  for (const r of view.ranges) ints.push(r.protocol, r.from, r.to, bitmap(r.offset));
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
    (view.ranges.length > 0 ? HAS_RANGES : 0) |
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
      const value = view.bitmaps[k * width + w] as number;
      block[at + summaries + w] = value;
      if (summaries > 0 && value !== 0)
        block[at + (w >>> 5)] = (block[at + (w >>> 5)] as number) | (1 << (w & 31));
    }
  }
  return block;
}
