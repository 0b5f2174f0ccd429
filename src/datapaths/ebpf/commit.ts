/**
 * The safe update (after the seed's ordering): a commit writes its new tables beside the old
 * ones, writes the changed address records into the side no packet reads (records exist once
 * per side; the program reads side `epoch & 1`), then switches the epoch — one array element,
 * so every packet sees the old records or the new ones, never a mix. Only after a grace period
 * (every program run that could have read the old side has finished) does the tail bring the
 * old side level and delete the tables and group names nothing references: no packet ever meets a
 * half-written side or a deleted table. The grace period is awaited in the background; a commit
 * that comes before it ends waits for it first.
 *
 * The writer remembers what each side holds, so a record is written only where it differs.
 * That memory is only true while this writer alone switches the maps: before it writes a side
 * (a commit, or a tail) it reads the epoch back, and one it did not write means another writer
 * has taken the maps over — the commit is refused and the tail dropped, because the side this
 * writer believes no packet reads may be the live one now.
 */
import { EbpfError, layout, type MapName } from './kernel/index.ts';
import type { AddressedRecord, CommitPlan, DeadTable, LiveTable, RecordModel } from './node-maps.ts';
import { sameRecord } from './node-maps.ts';
import { summaryOf, word } from './bitmaps.ts';

/** Where map operations go: the kernel's pinned maps, or a recorder. */
export interface MapSink {
  put(map: MapName, key: Buffer, value: Buffer): void;
  remove(map: MapName, key: Buffer): void;
  /** Reads an entry (absent: a recorder, whose epoch nobody else moves). */
  get?(map: MapName, key: Buffer): Buffer | undefined;
  /** Waits out a grace period (absent: nothing reads the maps concurrently). */
  graceSync?(): void;
  graceAsync?(done: (error: Error | undefined) => void): void;
}

/** The state a writer starts from: fresh maps, or what was read back from the kernel. */
export interface SideState {
  readonly epoch: number;
  /** Per side, address text → what its record holds there. */
  readonly sides: readonly [ReadonlyMap<string, RecordModel>, ReadonlyMap<string, RecordModel>];
}

export interface CommitCounts {
  /** Map operations before the switch (tables, group names, records of the new side). */
  readonly operations: number;
  readonly epoch: number;
}

interface Tail {
  readonly records: readonly AddressedRecord[];
  readonly deadTables: readonly DeadTable[];
  readonly deadGroups: readonly number[];
  readonly raw: readonly { readonly map: MapName; readonly key: Buffer }[];
  graceOver: boolean;
}

const groupChunks = (record: RecordModel | undefined): number =>
  record ? Math.ceil(Math.max(0, record.groups.length - layout.INLINE_GROUPS) / layout.GROUP_CHUNK) : 0;

/** Chunks of a restricted record's previous groups (all in chunks, numbered from RESTRICT_CHUNK). */
const previousChunks = (record: RecordModel | undefined): number =>
  Math.ceil((record?.previous?.groups?.length ?? 0) / layout.GROUP_CHUNK);

const sameList = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * What an address's record holds between the two phases of an update across nodes: the new
 * record, with what it held before where that differs (the program then requires the previous
 * policy to allow a packet too). A new address takes its new record; one that goes keeps its old
 * record until the second phase.
 */
function restrictedRecord(
  before: RecordModel | undefined,
  after: RecordModel | undefined,
): RecordModel | undefined {
  if (!before || !after) return after ?? before;
  const tablesChanged = before.endpoint && after.endpoint && !sameList(before.tables, after.tables);
  const groupsChanged = !sameList(before.groups, after.groups);
  if (!tablesChanged && !groupsChanged) return after;
  return {
    ...after,
    previous: {
      ...(tablesChanged ? { tables: before.tables } : {}),
      ...(groupsChanged ? { groups: before.groups } : {}),
    },
  };
}

export class SidedWriter {
  private epochValue: number;
  private readonly sides: [Map<string, RecordModel>, Map<string, RecordModel>];
  private tail: Tail | undefined;
  /** The plan whose first phase is live (its second, `commit`, writes only records). */
  private restricted: CommitPlan | undefined;
  /** Operations of tails run so far (for tests and statistics). */
  tailOperations = 0;
  /** Tails dropped because another writer had switched the maps since (for tests). */
  tailsDropped = 0;

  constructor(
    private readonly sink: MapSink,
    start: SideState = { epoch: 0, sides: [new Map(), new Map()] },
  ) {
    this.epochValue = start.epoch;
    this.sides = [new Map(start.sides[0]), new Map(start.sides[1])];
  }

  get epoch(): number {
    return this.epochValue;
  }

  /** Writes a plan and makes it live; its tail follows after a grace period. */
  commit(plan: CommitPlan, groupId: (hash: string) => number): CommitCounts {
    // The second phase of `commitRestricted(plan)`: its tables and group names are there.
    const written = this.restricted === plan;
    this.restricted = undefined;
    // Nothing differs on either side: no switch (most events elsewhere in a cluster touch nothing here).
    if (!written && this.unchanged(plan)) return { operations: 0, epoch: this.epochValue };
    return this.switchTo(written ? { newGroups: [], newTables: [] } : plan, plan.records, groupId, plan);
  }

  /**
   * The first phase of an update across nodes: the plan's new tables and group names, and each
   * changed record restricted (new and previous policy both required, `restrictedRecord`), made
   * live by one switch. Nothing is deleted: the previous tables stay in use until `commit` of the
   * same plan finishes the update (then only records are written).
   */
  commitRestricted(plan: CommitPlan, groupId: (hash: string) => number): CommitCounts {
    if (this.unchanged(plan)) return { operations: 0, epoch: this.epochValue };
    this.finishTail();
    const live = this.sides[(this.epochValue & 1) as 0 | 1];
    const records = plan.records.map((r) => ({ ...r, record: restrictedRecord(live.get(r.text), r.record) }));
    const counts = this.switchTo(plan, records, groupId, { deadTables: [], deadGroups: [] });
    this.restricted = plan;
    return counts;
  }

  private switchTo(
    writes: Pick<CommitPlan, 'newGroups' | 'newTables'>,
    records: readonly AddressedRecord[],
    groupId: (hash: string) => number,
    deletes: Pick<CommitPlan, 'deadTables' | 'deadGroups' | 'raw'>,
  ): CommitCounts {
    this.finishTail();
    const held = this.kernelEpoch();
    if (held !== undefined && held !== this.epochValue)
      throw new EbpfError(
        `the node's maps are at epoch ${held}, not ${this.epochValue} as this writer left them: another writer switched them, so nothing was written (read them back and commit again)`,
      );
    let operations = 0;
    const count = (map: MapName, key: Buffer, value: Buffer) => {
      this.sink.put(map, key, value);
      operations++;
    };
    for (const { id, hash } of writes.newGroups)
      count('group_names', layout.u32(id), Buffer.from(hash, 'hex'));
    for (const table of writes.newTables) operations += writeTable(this.sink, table, groupId);
    const next = 1 - (this.epochValue & 1);
    for (const r of records) operations += this.writeRecord(next, r);
    this.epochValue = (this.epochValue + 1) >>> 0;
    count('gen', layout.u32(0), layout.u32(this.epochValue));
    const tail: Tail = {
      records,
      deadTables: deletes.deadTables,
      deadGroups: deletes.deadGroups,
      raw: deletes.raw ?? [],
      graceOver: false,
    };
    this.tail = tail;
    if (!this.sink.graceAsync) this.finishTail();
    else
      this.sink.graceAsync((error) => {
        // A failed wait leaves the tail to the next commit, which waits synchronously.
        if (error || this.tail !== tail) return;
        tail.graceOver = true;
        this.finishTail();
      });
    return { operations, epoch: this.epochValue };
  }

  private unchanged(plan: CommitPlan): boolean {
    return (
      plan.newTables.length === 0 &&
      plan.newGroups.length === 0 &&
      plan.deadTables.length === 0 &&
      plan.deadGroups.length === 0 &&
      (plan.raw?.length ?? 0) === 0 &&
      plan.records.every(
        (r) =>
          sameRecord(this.sides[0].get(r.text), r.record) && sameRecord(this.sides[1].get(r.text), r.record),
      )
    );
  }

  /** Runs the pending tail now (waiting out the grace period if it has not ended). */
  finishTail(): void {
    const tail = this.tail;
    if (!tail) return;
    if (!tail.graceOver) this.sink.graceSync?.();
    this.tail = undefined;
    const held = this.kernelEpoch();
    if (held !== undefined && held !== this.epochValue) {
      // Another writer switched the maps after this one: "the old side" may be live there.
      this.tailsDropped++;
      return;
    }
    const old = this.epochValue & 1 ? 0 : 1;
    let operations = 0;
    for (const r of tail.records) operations += this.writeRecord(old, r);
    for (const table of tail.deadTables) operations += deleteTable(this.sink, table);
    for (const id of tail.deadGroups) {
      this.sink.remove('group_names', layout.u32(id));
      operations++;
    }
    for (const { map, key } of tail.raw) {
      this.sink.remove(map, key);
      operations++;
    }
    this.tailOperations += operations;
  }

  /** The epoch the maps hold (an array element: never written reads as 0); undefined for a recorder. */
  private kernelEpoch(): number | undefined {
    if (!this.sink.get) return undefined;
    return this.sink.get('gen', layout.u32(0))?.readUInt32LE(0) ?? 0;
  }

  /** What a side's record of an address holds (tests, readback comparisons). */
  recordOn(side: number, text: string): RecordModel | undefined {
    return this.sides[side & 1]?.get(text);
  }

  private writeRecord(side: number, { text, bytes, record }: AddressedRecord): number {
    const held = this.sides[side as 0 | 1];
    const before = held.get(text);
    if (sameRecord(before, record)) return 0;
    let operations = 0;
    const chunks = groupChunks(record);
    const previous = previousChunks(record);
    if (record) {
      for (let c = 0; c < chunks; c++) {
        const at = layout.INLINE_GROUPS + c * layout.GROUP_CHUNK;
        this.sink.put(
          'record_groups',
          layout.groupChunkKey(side, bytes, c),
          layout.groupChunkValue(record.groups.slice(at, at + layout.GROUP_CHUNK)),
        );
        operations++;
      }
      const previousGroups = record.previous?.groups ?? [];
      for (let c = 0; c < previous; c++) {
        const at = c * layout.GROUP_CHUNK;
        this.sink.put(
          'record_groups',
          layout.groupChunkKey(side, bytes, layout.RESTRICT_CHUNK + c),
          layout.groupChunkValue(previousGroups.slice(at, at + layout.GROUP_CHUNK)),
        );
        operations++;
      }
      this.sink.put('records', layout.addressKey(side, bytes), layout.recordValue(recordValueOf(record)));
      held.set(text, record);
    } else {
      this.sink.remove('records', layout.addressKey(side, bytes));
      held.delete(text);
    }
    operations++;
    for (let c = chunks; c < groupChunks(before); c++) {
      this.sink.remove('record_groups', layout.groupChunkKey(side, bytes, c));
      operations++;
    }
    for (let c = previous; c < previousChunks(before); c++) {
      this.sink.remove('record_groups', layout.groupChunkKey(side, bytes, layout.RESTRICT_CHUNK + c));
      operations++;
    }
    return operations;
  }
}

/** A record model as the program's struct holds it. */
function recordValueOf(record: RecordModel): layout.RecordValue {
  const previous = record.previous;
  return {
    flags:
      (record.endpoint ? layout.REC_ENDPOINT : 0) |
      (previous?.tables ? layout.REC_RESTRICT : 0) |
      (previous?.groups ? layout.REC_RESTRICT_GROUPS : 0),
    node: record.endpoint ? 1 : 0,
    nodeAddressOf: record.nodeAddress ? 1 : 0,
    groupCount: record.groups.length,
    tables: record.tables,
    groups: record.groups.slice(0, layout.INLINE_GROUPS),
    ...(previous?.tables ? { restrictTables: previous.tables } : {}),
    ...(previous?.groups ? { restrictGroupCount: previous.groups.length } : {}),
  };
}

/** The bytes of an address given as (family, base) in a CIDR entry. */
function cidrAddress(family: 4 | 6, base: bigint): layout.AddressBytes {
  const bytes = new Uint8Array(16);
  const length = family === 4 ? 4 : 16;
  let value = base;
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return { family, bytes };
}

/** Every (map, key, value) of a table; values need the table's bitmap numbering. */
function tableOperations(
  { id, entries }: LiveTable,
  groupId: (hash: string) => number,
): { map: MapName; key: Buffer; value: Buffer }[] {
  const ops: { map: MapName; key: Buffer; value: Buffer }[] = [];
  // An entry holds its first ENTRY_WORDS non-zero words; a bitmap with more has its own number
  // in the table, under which `bits` holds the rest.
  let numbered = 0;
  const entry = (bitmap: Uint32Array | undefined): layout.EntryValue => {
    if (!bitmap) return layout.emptyEntry();
    const summary = summaryOf(bitmap, entries.stride);
    if (summary === 0n) return layout.emptyEntry();
    const words: layout.BitmapWord[] = [];
    for (let k = 0; k < entries.words; k++) {
      const w = word(bitmap, k);
      if (w !== 0n) words.push({ at: k, value: w });
    }
    const index = words.length > layout.ENTRY_WORDS ? numbered++ : 0;
    for (const w of words.slice(layout.ENTRY_WORDS))
      ops.push({ map: 'bits', key: layout.bitsKey(id, index, w.at), value: layout.u64(w.value) });
    return { summary, words: words.slice(0, layout.ENTRY_WORDS), count: words.length, index };
  };
  for (const p of entries.ports)
    ops.push({
      map: 'ports',
      key: layout.portKey(id, p.protocol, p.port),
      value: layout.entryValue(entry(p.bitmap)),
    });
  for (const r of entries.ranges)
    ops.push({
      map: 'ranges',
      key: layout.rangeKey(id, r.protocol, r.port, r.prefix),
      value: layout.entryValue(entry(r.bitmap)),
    });
  for (const c of entries.cidrs)
    ops.push({
      map: 'cidrs',
      key: layout.cidrKey(id, c.kind, cidrAddress(c.family, c.base), c.prefix),
      value: layout.entryValue(entry(c.bitmap)),
    });
  for (const g of entries.groups)
    ops.push({
      map: 'groups',
      key: layout.pairKey(id, groupId(g.hash)),
      value: layout.entryValue(entry(g.bitmap)),
    });
  for (const a of entries.actions)
    ops.push({ map: 'actions', key: layout.pairKey(id, a.slot), value: layout.u32(a.action) });
  // The header last: a table is complete before anything can find it.
  const any = [0, 1, 2].map((p) => entry(entries.any[p])) as [
    layout.EntryValue,
    layout.EntryValue,
    layout.EntryValue,
  ];
  ops.push({
    map: 'tables',
    key: layout.u32(id),
    value: layout.tableValue({
      words: entries.words,
      stride: entries.stride,
      flags: entries.flags,
      slots: entries.slots,
      l3: entry(entries.l3),
      any,
    }),
  });
  return ops;
}

function writeTable(sink: MapSink, table: LiveTable, groupId: (hash: string) => number): number {
  const ops = tableOperations(table, groupId);
  for (const op of ops) sink.put(op.map, op.key, op.value);
  return ops.length;
}

/** Deletes every entry of a table, the header first (so nothing finds it half gone). */
function deleteTable(sink: MapSink, table: DeadTable): number {
  const ids = new Map(table.entries.groups.map((g, i) => [g.hash, table.groupIds[i] ?? 0]));
  const ops = tableOperations(table, (hash) => ids.get(hash) ?? 0);
  sink.remove('tables', layout.u32(table.id));
  for (const op of ops) if (op.map !== 'tables') sink.remove(op.map, op.key);
  return ops.length;
}
