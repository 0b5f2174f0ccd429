/**
 * Packing a built table into its block (layout in block-layout.ts): the hot header, the port
 * and group entries, the cold header, the other entry lists, then the bitmaps, each after its
 * summary words (one bit per non-zero word, for bitmaps wider than one word). In wide blocks
 * entries point at a bitmap's first word (offsets relative to the block's start); in narrow
 * blocks (one-word bitmaps) they hold the word itself, and entries whose word is 0 are left out.
 */
import type { DirectionTable } from './direction-table.ts';
import type { LpmTrie } from './lpm-trie.ts';
import {
  ACTION_AT,
  ANY,
  BITS,
  COLD_AT,
  COLD_FIELDS,
  entryListLength,
  FEW_V4,
  FLAGS,
  GROUP_COUNT,
  HAS_GROUPS,
  HAS_HOSTS,
  HAS_PRIM_V4,
  HAS_RANGES,
  HAS_SUPP_V4,
  HAS_V6,
  HEADER,
  HOST_AT,
  HOST_COUNT,
  L3,
  NARROW,
  NONE,
  PORT_COUNT,
  pushEntries,
  RANGE_COUNT,
  SUMMARY,
  TRIE_V6,
  WIDTH_SHIFT,
} from './block-layout.ts';

const MAPS = ['prim', 'supp', 'except'] as const;

type Entry = readonly [number, number];

/** The block of one table; `registerTrie` numbers the tries its big prefix maps stay in. */
export function packTable(
  table: DirectionTable,
  actions: Uint8Array | undefined,
  registerTrie: (trie: LpmTrie) => number,
): Int32Array {
  const view = table.packView();
  const width = table.width;
  const narrow = width === 1;
  const summaries = narrow ? 0 : Math.ceil(width / 32);
  const stride = width + summaries;
  const bitmapCount = view.bitmaps.length / width;
  // What marks "none" in a field or an empty hashed slot: an offset is never -1, a narrow
  // block's word is never 0 (such entries match nothing and are left out).
  const missing = narrow ? 0 : NONE;
  // Entries hold a placeholder (the builder's offset) until the bitmaps' place is known.
  const kept = (entries: Iterable<Entry>): Entry[] =>
    [...entries].filter(([, offset]) => !narrow || view.bitmaps[offset] !== 0);
  const ports = kept(view.ports);
  const groups = kept(view.groups);
  const hosts = kept([...view.hostsV4].map(([address, offset]) => [address | 0, offset] as const));
  const ranges = view.ranges.filter((r) => !narrow || view.bitmaps[r.offset] !== 0);
  const few = MAPS.map((map) => {
    const list = view.fewV4[map];
    return list && list.filter((e) => !narrow || view.bitmaps[e.offset] !== 0);
  });
  // A prefix map too big for a short list stays in a trie, whose values are builder offsets.
  const trie4 = MAPS.map((map, m) => (few[m] ? undefined : view.tries[map][4]));
  const trie6 = MAPS.map((map) => view.tries[map][6]);
  const usesTries = [...trie4, ...trie6].some((trie) => trie !== undefined);
  // A narrow block keeps its bitmaps only for its tries, and its cold header only when a
  // lookup or the tier walk reads something there: most NetworkPolicy blocks are then their
  // hot header and entries alone.
  const hasCold =
    !narrow ||
    usesTries ||
    actions !== undefined ||
    ranges.length > 0 ||
    hosts.length > 0 ||
    few.some((list) => (list?.length ?? 0) > 0);
  // Bitmap offsets are final once the entry lists' length is known.
  const cold = HEADER + entryListLength(ports.length) + entryListLength(groups.length);
  const listLength = !hasCold
    ? 0
    : COLD_FIELDS +
      4 * ranges.length +
      entryListLength(hosts.length) +
      few.reduce((sum, list) => sum + 3 * (list?.length ?? 0), 0) +
      (actions?.length ?? 0);
  const bits = cold + listLength;
  const value = (offset: number): number =>
    narrow ? (view.bitmaps[offset] as number) : bits + (offset / width) * stride + summaries;
  const optional = (offset: number | undefined): number => (offset === undefined ? missing : value(offset));
  const final = (entries: Entry[]): Entry[] => entries.map(([key, offset]) => [key, value(offset)] as const);

  const ints: number[] = new Array<number>(HEADER).fill(missing);
  ints[L3] = optional(view.l3);
  view.protocolAny.forEach((offset, p) => (ints[ANY + p] = optional(offset)));
  ints[PORT_COUNT] = ports.length;
  pushEntries(ints, final(ports), missing); // at PORTS: nothing was pushed before
  ints[GROUP_COUNT] = groups.length;
  pushEntries(ints, final(groups), missing); // at groupEntriesAt(ports.length)
  ints[COLD_AT] = hasCold ? cold : NONE;
  let hasV4 = 0;
  if (hasCold) {
    ints.push(...new Array<number>(COLD_FIELDS).fill(NONE));
    const field = (f: number, v: number): void => {
      ints[cold + f] = v;
    };
    field(RANGE_COUNT, ranges.length); // the ranges follow the cold header (RANGE_AT)
    for (const r of ranges) ints.push(r.protocol, r.from, r.to, value(r.offset));
    field(HOST_COUNT, hosts.length);
    field(HOST_AT, ints.length);
    pushEntries(ints, final(hosts), missing);
    MAPS.forEach((_, m) => {
      const at = FEW_V4 + m * 3;
      const entries = few[m];
      const trie = trie4[m];
      field(at, entries?.length ?? 0);
      field(at + 1, entries ? ints.length : 0);
      for (const e of entries ?? []) ints.push(e.base | 0, e.mask | 0, value(e.offset));
      field(at + 2, trie ? registerTrie(trie) : NONE);
      if ((entries?.length ?? 0) > 0 || trie) hasV4 |= 1 << m;
      const six = trie6[m];
      field(TRIE_V6 + m, six ? registerTrie(six) : NONE);
    });
    field(ACTION_AT, actions ? ints.length : NONE);
    if (actions) for (const action of actions) ints.push(action);
    field(BITS, bits);
    field(SUMMARY, summaries);
  }
  ints[FLAGS] =
    (ranges.length > 0 ? HAS_RANGES : 0) |
    (hasV4 & 1 ? HAS_PRIM_V4 : 0) |
    (hosts.length > 0 ? HAS_HOSTS : 0) |
    (hasV4 & 2 ? HAS_SUPP_V4 : 0) |
    (trie6.some((trie) => trie !== undefined) ? HAS_V6 : 0) |
    (groups.length > 0 ? HAS_GROUPS : 0) |
    (narrow ? NARROW : 0) |
    (width << WIDTH_SHIFT);

  // Narrow blocks without tries read no bitmap: they end with their lists.
  const keptBitmaps = narrow && !usesTries ? 0 : bitmapCount;
  const block = new Int32Array(bits + keptBitmaps * stride);
  block.set(ints);
  for (let k = 0; k < keptBitmaps; k++) {
    const at = bits + k * stride;
    for (let w = 0; w < width; w++) {
      const word = view.bitmaps[k * width + w] as number;
      block[at + summaries + w] = word;
      if (summaries > 0 && word !== 0)
        block[at + (w >>> 5)] = (block[at + (w >>> 5)] as number) | (1 << (w & 31));
    }
  }
  return block;
}
