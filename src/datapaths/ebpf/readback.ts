/**
 * What a node's pinned maps hold, read back from the kernel (never from a state file): the epoch,
 * both sides' address records, every table rebuilt from its entries with its content key, and the
 * group names. A renderer attaching to running maps starts from this, so its first commit writes
 * only what differs; tables it does not take over, entries of tables that were never finished
 * (a process that died mid-commit) and group names nothing uses are deleted in that commit's tail.
 */
import { formatIp } from '../../net/ip.ts';
import { layout, type MapName, type BpfMaps } from './kernel/index.ts';
import { emptyBitmap, setWord } from './bitmaps.ts';
import type { DeadTable, KnownIds, RecordModel } from './node-maps.ts';
import type { SideState } from './commit.ts';
import { finish, type TableEntries } from './table-entries.ts';
import type { EbpfContent } from './output.ts';

export interface Readback {
  readonly known: KnownIds;
  readonly start: SideState;
  /** Every complete table, with the group ids its entries are keyed by (deleted unless taken over). */
  readonly tables: readonly DeadTable[];
  readonly groups: ReadonlyMap<number, string>;
  /** Entries of no complete table. */
  readonly raw: readonly { readonly map: MapName; readonly key: Buffer }[];
  /** Every address with a record on either side, with its bytes. */
  readonly addresses: readonly { readonly text: string; readonly bytes: layout.AddressBytes }[];
}

interface Parts {
  header?: layout.TableHeader;
  ports: { protocol: number; port: number; value: layout.EntryValue }[];
  ranges: { protocol: number; port: number; prefix: number; value: layout.EntryValue }[];
  cidrs: { kind: number; address: layout.AddressBytes; prefix: number; value: layout.EntryValue }[];
  groups: { group: number; value: layout.EntryValue }[];
  actions: { slot: number; action: number }[];
  bits: Map<string, bigint>;
  raw: { map: MapName; key: Buffer }[];
}

function textOf(address: layout.AddressBytes): string {
  return formatIp({ family: address.family, value: baseOf(address) });
}

function baseOf(address: layout.AddressBytes): bigint {
  let value = 0n;
  const length = address.family === 4 ? 4 : 16;
  for (let i = 0; i < length; i++) value = (value << 8n) | BigInt(address.bytes[i] as number);
  return value;
}

export function readBack(maps: BpfMaps): Readback {
  const genValue = maps.get('gen', layout.u32(0));
  const epoch = genValue ? genValue.readUInt32LE(0) : 0;
  const groupNames = new Map<number, string>();
  for (const [key, value] of maps.entries('group_names'))
    groupNames.set(key.readUInt32LE(0), value.toString('hex'));

  const parts = new Map<number, Parts>();
  const part = (id: number): Parts => {
    let p = parts.get(id);
    if (!p)
      parts.set(
        id,
        (p = { ports: [], ranges: [], cidrs: [], groups: [], actions: [], bits: new Map(), raw: [] }),
      );
    return p;
  };
  for (const [key, value] of maps.entries('tables')) {
    const p = part(key.readUInt32LE(0));
    p.header = layout.decodeTable(value);
    p.raw.push({ map: 'tables', key });
  }
  for (const [key, value] of maps.entries('ports')) {
    const k = layout.decodePortKey(key);
    const p = part(k.table);
    p.ports.push({ protocol: k.protocol, port: k.port, value: layout.decodeEntry(value) });
    p.raw.push({ map: 'ports', key });
  }
  for (const [key, value] of maps.entries('ranges')) {
    const k = layout.decodeRangeKey(key);
    const p = part(k.table);
    p.ranges.push({ protocol: k.protocol, port: k.port, prefix: k.prefix, value: layout.decodeEntry(value) });
    p.raw.push({ map: 'ranges', key });
  }
  for (const [key, value] of maps.entries('cidrs')) {
    const k = layout.decodeCidrKey(key);
    const p = part(k.table);
    p.cidrs.push({ kind: k.kind, address: k.address, prefix: k.prefix, value: layout.decodeEntry(value) });
    p.raw.push({ map: 'cidrs', key });
  }
  for (const [key, value] of maps.entries('groups')) {
    const [table, group] = layout.decodePairKey(key);
    const p = part(table);
    p.groups.push({ group, value: layout.decodeEntry(value) });
    p.raw.push({ map: 'groups', key });
  }
  for (const [key, value] of maps.entries('actions')) {
    const [table, slot] = layout.decodePairKey(key);
    const p = part(table);
    p.actions.push({ slot, action: value.readUInt32LE(0) });
    p.raw.push({ map: 'actions', key });
  }
  for (const [key, value] of maps.entries('bits')) {
    const k = layout.decodeBitsKey(key);
    const p = part(k.table);
    p.bits.set(`${k.index}|${k.word}`, value.readBigUInt64LE(0));
    p.raw.push({ map: 'bits', key });
  }

  const tables: DeadTable[] = [];
  const raw: { map: MapName; key: Buffer }[] = [];
  const knownTables = new Map<string, number>();
  let maxTable = 0;
  for (const [id, p] of parts) {
    maxTable = Math.max(maxTable, id);
    const rebuilt = p.header && rebuild(p, p.header, groupNames);
    if (!rebuilt) {
      for (const r of p.raw) raw.push(r);
      continue;
    }
    knownTables.set(rebuilt.entries.key, id);
    tables.push({ id, entries: rebuilt.entries, groupIds: rebuilt.groupIds });
  }

  const sides: [Map<string, RecordModel>, Map<string, RecordModel>] = [
    new Map<string, RecordModel>(),
    new Map<string, RecordModel>(),
  ];
  const addresses = new Map<string, layout.AddressBytes>();
  const chunks = new Map<string, number[]>();
  for (const [key, value] of maps.entries('record_groups')) {
    const k = layout.decodeGroupChunkKey(key);
    chunks.set(
      `${k.side}|${textOf(k.address)}|${k.chunk}`,
      layout.decodeGroupChunk(value, layout.GROUP_CHUNK),
    );
  }
  for (const [key, value] of maps.entries('records')) {
    const { side, address } = layout.decodeAddressKey(key);
    const text = textOf(address);
    const r = layout.decodeRecord(value);
    const groups = [...r.groups];
    for (let c = 0; groups.length < r.groupCount; c++) {
      const chunk = chunks.get(`${side}|${text}|${c}`);
      if (!chunk) break;
      for (const g of chunk.slice(0, r.groupCount - groups.length)) groups.push(g);
    }
    // A restricted record (a process stopped between the two phases of an update): its previous
    // groups are all in chunks numbered from RESTRICT_CHUNK.
    const previousGroups: number[] = [];
    const previousCount = r.flags & layout.REC_RESTRICT_GROUPS ? (r.restrictGroupCount ?? 0) : 0;
    for (let c = 0; previousGroups.length < previousCount; c++) {
      const chunk = chunks.get(`${side}|${text}|${layout.RESTRICT_CHUNK + c}`);
      if (!chunk) break;
      for (const g of chunk.slice(0, previousCount - previousGroups.length)) previousGroups.push(g);
    }
    addresses.set(text, address);
    sides[side & 1]?.set(text, {
      endpoint: (r.flags & layout.REC_ENDPOINT) !== 0,
      tables: r.tables,
      nodeAddress: r.nodeAddressOf !== 0,
      // A record whose chunks are missing holds fewer groups than it says: it will differ.
      groups: groups.length === r.groupCount ? groups : [...groups, -1],
      ...(r.flags & (layout.REC_RESTRICT | layout.REC_RESTRICT_GROUPS)
        ? {
            previous: {
              ...(r.flags & layout.REC_RESTRICT ? { tables: r.restrictTables ?? [] } : {}),
              ...(r.flags & layout.REC_RESTRICT_GROUPS ? { groups: previousGroups } : {}),
            },
          }
        : {}),
    });
  }
  const knownGroups = new Map([...groupNames].map(([id, hash]) => [hash, id]));
  return {
    known: {
      tables: knownTables,
      groups: knownGroups,
      maxTable,
      maxGroup: Math.max(0, ...groupNames.keys()),
    },
    start: { epoch, sides },
    tables,
    groups: groupNames,
    raw,
    addresses: [...addresses].map(([text, bytes]) => ({ text, bytes })),
  };
}

/** A table from its entries, or undefined when they do not make a whole table. */
function rebuild(
  p: Parts,
  header: layout.TableHeader,
  groupNames: ReadonlyMap<number, string>,
): { entries: TableEntries; groupIds: number[] } | undefined {
  const words = header.words;
  if (words < 1) return undefined;
  // The words an entry holds, then (when it has more) those in `bits` past the last it holds:
  // where the program reads them.
  const marked = (e: layout.EntryValue, k: number): boolean =>
    k < words && ((e.summary >> BigInt(Math.floor(k / header.stride))) & 1n) === 1n;
  const bitmap = (e: layout.EntryValue): Uint32Array => {
    const b = emptyBitmap(words);
    for (const w of e.words) if (marked(e, w.at)) setWord(b, w.at, w.value);
    const last = e.words.at(-1)?.at ?? 0;
    if (e.count > layout.ENTRY_WORDS)
      for (let k = last + 1; k < words; k++) {
        const w = p.bits.get(`${e.index}|${k}`);
        if (w !== undefined && marked(e, k)) setWord(b, k, w);
      }
    return b;
  };
  const optional = (e: layout.EntryValue): Uint32Array | undefined =>
    e.summary === 0n ? undefined : bitmap(e);
  const groups: { hash: string; bitmap: Uint32Array }[] = [];
  const groupIds: number[] = [];
  for (const g of p.groups) {
    const hash = groupNames.get(g.group);
    if (hash === undefined) return undefined;
    groups.push({ hash, bitmap: bitmap(g.value) });
    groupIds.push(g.group);
  }
  const entries = finish({
    slots: header.slots,
    words,
    l3: optional(header.l3),
    any: header.any.map(optional),
    ports: p.ports.map((e) => ({ protocol: e.protocol, port: e.port, bitmap: bitmap(e.value) })),
    ranges: p.ranges.map((e) => ({
      protocol: e.protocol,
      port: e.port,
      prefix: e.prefix,
      bitmap: bitmap(e.value),
    })),
    cidrs: p.cidrs.map((e) => ({
      kind: e.kind,
      family: e.address.family,
      base: baseOf(e.address),
      prefix: e.prefix,
      bitmap: bitmap(e.value),
    })),
    groups,
    actions: p.actions,
    labels: [],
    tier: (header.flags & layout.TIER_TABLE) !== 0,
  });
  if (entries.flags !== header.flags || entries.stride !== header.stride) return undefined;
  // groupIds in the order finish() sorted the groups.
  const idOf = new Map(groups.map((g, i) => [g.hash, groupIds[i] as number]));
  return { entries, groupIds: entries.groups.map((g) => idOf.get(g.hash) as number) };
}

/** The live side of read-back maps as content (what a packet sees now). */
export function liveContent(readback: Readback): EbpfContent {
  const side = readback.start.sides[(readback.start.epoch & 1) as 0 | 1];
  const bytes = new Map(readback.addresses.map((a) => [a.text, a.bytes]));
  return {
    epoch: readback.start.epoch,
    tables: readback.tables.map(({ id, entries }) => ({ id, entries })),
    records: [...side].map(([text, record]) => ({
      text,
      bytes: bytes.get(text) as layout.AddressBytes,
      record,
    })),
    groups: new Map(readback.groups),
    groupIds: readback.known.groups,
  };
}
