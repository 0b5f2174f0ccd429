/**
 * One node's BPF maps as data, kept current change by change: tables by content (an id each,
 * counted by the records that use them), group ids by reference (counted by the tables whose
 * entries name them, with their member addresses), and per address what its record says — the
 * local endpoint's table ids, whether it is this node's address, and the groups it is in.
 *
 * Every change marks what it touches; `plan()` turns the marks into what a commit writes: the
 * records of the touched addresses, the tables and group names that appear, and those that went
 * (deleted only after the switch). Work follows the change: a pod's tables, a group's members.
 * Ids are never reused while the maps may hold them; a table or group the kernel already holds
 * (read back on attach) keeps its id, so re-attaching writes only what differs.
 */
import { formatIp, type IpAddress } from '../../net/ip.ts';
import type { AddressGroup, ReadonlyStore } from '../../state/index.ts';
import { referenceMembers } from '../../classifier/index.ts';
import { EbpfError, layout, type AddressBytes, type MapName } from './kernel/index.ts';
import { PARTITION_SEPARATOR } from '../../configurator/types.ts';
import type { TableEntries } from './table-entries.ts';

/** What one address's record holds. */
export interface RecordModel {
  readonly endpoint: boolean;
  /** TABLE_SLOTS table ids (0: none); all 0 unless an endpoint. */
  readonly tables: readonly number[];
  readonly nodeAddress: boolean;
  /** Group ids, ascending. */
  readonly groups: readonly number[];
  /**
   * During the first phase of a two-phase update: the previous policy's tables (the side must
   * pass them too) and, where they differ, the address's previous groups (judged with them).
   */
  readonly previous?: { readonly tables?: readonly number[]; readonly groups?: readonly number[] };
}

export interface AddressedRecord {
  readonly text: string;
  readonly bytes: AddressBytes;
  /** Undefined: the address has no record. */
  readonly record: RecordModel | undefined;
}

export interface LiveTable {
  readonly id: number;
  readonly entries: TableEntries;
}

/** A table to delete, with the group ids its entries are keyed by. */
export interface DeadTable extends LiveTable {
  readonly groupIds: readonly number[];
}

/** What one commit writes (`raw`: entries found in the kernel that belong to no table, deleted in the tail). */
export interface CommitPlan {
  readonly newTables: readonly LiveTable[];
  readonly newGroups: readonly { readonly id: number; readonly hash: string }[];
  readonly records: readonly AddressedRecord[];
  readonly deadTables: readonly DeadTable[];
  readonly deadGroups: readonly number[];
  readonly raw?: readonly { readonly map: MapName; readonly key: Buffer }[];
}

/** Ids the kernel already holds (read back on attach), by content key and reference hash. */
export interface KnownIds {
  readonly tables: ReadonlyMap<string, number>;
  readonly groups: ReadonlyMap<string, number>;
  /** Every id seen in the kernel: new ones start above. */
  readonly maxTable: number;
  readonly maxGroup: number;
}

interface TableSlot {
  readonly id: number;
  readonly entries: TableEntries;
  users: number;
}

interface GroupSlot {
  readonly id: number;
  readonly hash: string;
  readonly reference: string;
  users: number;
  members: Set<string>;
  /** The store's group object the members were read from (a group dropped and made again is new). */
  filledFrom: AddressGroup | undefined;
}

interface AddressState {
  readonly bytes: AddressBytes;
  tables: readonly number[] | undefined;
  /** The pod whose tables these are. */
  owner: string | undefined;
  nodeAddress: boolean;
  readonly groups: Set<number>;
}

const NO_TABLES: readonly number[] = new Array<number>(layout.TABLE_SLOTS).fill(0);

/** An address's text (its key here) and its bytes as map keys hold them. */
export function addressOf(ip: IpAddress): { text: string; bytes: AddressBytes } {
  const bytes = new Uint8Array(16);
  const length = ip.family === 4 ? 4 : 16;
  let value = ip.value;
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return { text: formatIp(ip), bytes: { family: ip.family, bytes } };
}

const groupKeyOf = (reference: string): string => {
  const separator = reference.indexOf(PARTITION_SEPARATOR);
  return separator < 0 ? reference : reference.slice(0, separator);
};

export class NodeMaps {
  private readonly tables = new Map<string, TableSlot>();
  private readonly groups = new Map<string, GroupSlot>();
  /** Group slots by the store's group key (a partition `key#n` under `key`). */
  private readonly groupsByKey = new Map<string, Set<GroupSlot>>();
  private readonly addresses = new Map<string, AddressState>();
  private readonly pods = new Map<string, { addresses: string[]; keys: (string | undefined)[] }>();
  private nodeAddresses = new Set<string>();
  private nextTable: number;
  private nextGroup: number;
  // Marks of the commit in progress.
  private readonly dirty = new Set<string>();
  /** Bytes of addresses touched from outside (records the kernel holds and the model may not). */
  private readonly touchedBytes = new Map<string, AddressBytes>();
  private readonly touchedTables = new Set<string>();
  private readonly touchedGroups = new Set<string>();
  private readonly createdTables = new Set<string>();
  private readonly createdGroups = new Set<string>();

  constructor(
    private readonly state: ReadonlyStore,
    private known: KnownIds | undefined = undefined,
  ) {
    this.nextTable = (known?.maxTable ?? 0) + 1;
    this.nextGroup = (known?.maxGroup ?? 0) + 1;
  }

  /** A local pod's tables (slots in record order; undefined: the pod is gone or not an endpoint). */
  setEndpoint(
    pod: string,
    ips: readonly IpAddress[],
    tables: readonly (TableEntries | undefined)[] | undefined,
  ): void {
    const before = this.pods.get(pod);
    const keys = tables?.map((t) => t && this.acquireTable(t).entries.key);
    if (before) {
      for (const key of before.keys) if (key !== undefined) this.releaseTable(key);
      for (const text of before.addresses) {
        const state = this.addresses.get(text);
        // An address that moved to another pod in the same commit keeps that pod's tables.
        if (state?.owner === pod) {
          state.tables = undefined;
          state.owner = undefined;
        }
        this.dirty.add(text);
      }
      this.pods.delete(pod);
    }
    if (!tables || !keys) return;
    const ids = keys.map((key) => (key === undefined ? 0 : (this.tables.get(key) as TableSlot).id));
    const texts: string[] = [];
    for (const ip of ips) {
      const state = this.address(ip);
      state.tables = ids;
      state.owner = pod;
      texts.push(formatIp(ip));
      this.dirty.add(formatIp(ip));
    }
    this.pods.set(pod, { addresses: texts, keys });
  }

  /** The node's own addresses (NodeInfo addresses and host-network pods'). */
  setNodeAddresses(ips: readonly IpAddress[]): void {
    const next = new Set<string>();
    for (const ip of ips) {
      const state = this.address(ip);
      next.add(formatIp(ip));
      if (!state.nodeAddress) {
        state.nodeAddress = true;
        this.dirty.add(formatIp(ip));
      }
    }
    for (const text of this.nodeAddresses)
      if (!next.has(text)) {
        const state = this.addresses.get(text);
        if (state) state.nodeAddress = false;
        this.dirty.add(text);
      }
    this.nodeAddresses = next;
  }

  /** The store's groups whose members changed: the references to them are read again. */
  refreshGroups(keys: Iterable<string>): void {
    for (const key of keys) for (const slot of this.groupsByKey.get(key) ?? []) this.refill(slot);
  }

  /**
   * References whose group the store dropped and made again (a policy replaced in the same
   * batch): their members are read again. An identity check per group this node uses.
   */
  refreshReplacedGroups(): void {
    for (const [key, slots] of this.groupsByKey) {
      const group = this.state.group(key);
      for (const slot of slots) if (slot.filledFrom !== group) this.refill(slot);
    }
  }

  private refill(slot: GroupSlot): void {
    const next = new Set<string>();
    for (const ip of referenceMembers(this.state, slot.reference)) {
      const text = formatIp(ip);
      next.add(text);
      if (!slot.members.has(text)) {
        this.address(ip).groups.add(slot.id);
        this.dirty.add(text);
      }
    }
    for (const text of slot.members)
      if (!next.has(text)) {
        this.addresses.get(text)?.groups.delete(slot.id);
        this.dirty.add(text);
      }
    slot.members = next;
    slot.filledFrom = this.state.group(groupKeyOf(slot.reference));
  }

  /** Ends the commit's changes: what to write, what to delete after the switch. */
  plan(): CommitPlan {
    const deadTables: DeadTable[] = [];
    for (const key of this.touchedTables) {
      const slot = this.tables.get(key);
      if (!slot || slot.users > 0) continue;
      this.tables.delete(key);
      const groupIds = slot.entries.groups.map((g) => this.groupId(g.hash));
      for (const g of slot.entries.groups) this.releaseGroup(g.hash);
      if (!this.createdTables.delete(key)) deadTables.push({ id: slot.id, entries: slot.entries, groupIds });
    }
    const deadGroups: number[] = [];
    for (const hash of this.touchedGroups) {
      const slot = this.groups.get(hash);
      if (!slot || slot.users > 0) continue;
      this.groups.delete(hash);
      this.groupsByKey.get(groupKeyOf(slot.reference))?.delete(slot);
      for (const text of slot.members) {
        this.addresses.get(text)?.groups.delete(slot.id);
        this.dirty.add(text);
      }
      if (!this.createdGroups.delete(hash)) deadGroups.push(slot.id);
    }
    const newTables = [...this.createdTables].map((key) => this.tables.get(key) as TableSlot);
    const newGroups = [...this.createdGroups].map((hash) => {
      const slot = this.groups.get(hash) as GroupSlot;
      return { id: slot.id, hash };
    });
    const records: AddressedRecord[] = [];
    for (const text of this.dirty) {
      const state = this.addresses.get(text);
      if (!state) {
        const bytes = this.touchedBytes.get(text);
        if (bytes) records.push({ text, bytes, record: undefined });
        continue;
      }
      const record = recordOf(state);
      if (!record) this.addresses.delete(text);
      records.push({ text, bytes: state.bytes, record });
    }
    this.dirty.clear();
    this.touchedBytes.clear();
    this.touchedTables.clear();
    this.touchedGroups.clear();
    this.createdTables.clear();
    this.createdGroups.clear();
    // Ids the kernel held are taken over by the first commit after attaching; later ones are new.
    this.known = undefined;
    return { newTables, newGroups, records, deadTables, deadGroups };
  }

  /** Marks addresses to be compared with the kernel at the next plan (after attaching). */
  touch(addresses: Iterable<{ readonly text: string; readonly bytes: AddressBytes }>): void {
    for (const { text, bytes } of addresses) {
      this.dirty.add(text);
      this.touchedBytes.set(text, bytes);
    }
  }

  /** Every group reference's members read again (after a resync of the store). */
  refreshAllGroups(): void {
    this.refreshGroups([...this.groupsByKey.keys()]);
  }

  /** Every address that has a record now. */
  records(): AddressedRecord[] {
    return [...this.addresses].map(([text, state]) => ({
      text,
      bytes: state.bytes,
      record: recordOf(state),
    }));
  }

  /** Every table the records use now. */
  liveTables(): LiveTable[] {
    return [...this.tables.values()].map(({ id, entries }) => ({ id, entries }));
  }

  /** The group id of a reference hash (tables' group entries name groups by hash). */
  groupId(hash: string): number {
    const slot = this.groups.get(hash);
    if (!slot) throw new Error(`unreachable: no group id for ${hash}`);
    return slot.id;
  }

  /** Group ids by reference hash. */
  groupIds(): Map<string, number> {
    return new Map([...this.groups.values()].map((slot) => [slot.hash, slot.id]));
  }

  /** Group references by id (for printing). */
  groupReferences(): Map<number, string> {
    return new Map([...this.groups.values()].map((slot) => [slot.id, slot.reference]));
  }

  private address(ip: IpAddress): AddressState {
    const { text, bytes } = addressOf(ip);
    let state = this.addresses.get(text);
    if (!state) {
      state = { bytes, tables: undefined, owner: undefined, nodeAddress: false, groups: new Set() };
      this.addresses.set(text, state);
    }
    return state;
  }

  private acquireTable(entries: TableEntries): TableSlot {
    let slot = this.tables.get(entries.key);
    if (!slot) {
      const known = this.known?.tables.get(entries.key);
      slot = { id: known ?? this.nextTable++, entries, users: 0 };
      this.tables.set(entries.key, slot);
      if (known === undefined) this.createdTables.add(entries.key);
      for (const g of entries.groups) {
        if (g.reference === undefined)
          throw new Error('unreachable: a desired table without group references');
        this.acquireGroup(g.hash, g.reference);
      }
    }
    slot.users++;
    return slot;
  }

  private releaseTable(key: string): void {
    const slot = this.tables.get(key);
    if (!slot) return;
    slot.users--;
    this.touchedTables.add(key);
  }

  private acquireGroup(hash: string, reference: string): void {
    let slot = this.groups.get(hash);
    if (!slot) {
      const known = this.known?.groups.get(hash);
      const filledFrom = this.state.group(groupKeyOf(reference));
      slot = { id: known ?? this.nextGroup++, hash, reference, users: 0, members: new Set(), filledFrom };
      this.groups.set(hash, slot);
      const key = groupKeyOf(reference);
      let byKey = this.groupsByKey.get(key);
      if (!byKey) this.groupsByKey.set(key, (byKey = new Set()));
      byKey.add(slot);
      if (known === undefined) this.createdGroups.add(hash);
      for (const ip of referenceMembers(this.state, reference)) {
        const text = formatIp(ip);
        slot.members.add(text);
        this.address(ip).groups.add(slot.id);
        this.dirty.add(text);
      }
    }
    slot.users++;
  }

  private releaseGroup(hash: string): void {
    const slot = this.groups.get(hash);
    if (!slot) return;
    slot.users--;
    this.touchedGroups.add(hash);
  }
}

function recordOf(state: AddressState): RecordModel | undefined {
  if (!state.tables && !state.nodeAddress && state.groups.size === 0) return undefined;
  if (state.groups.size > layout.MAX_GROUPS)
    throw new EbpfError(
      `${state.groups.size} address groups of this node's tables contain one address; the eBPF datapath matches at most ${layout.MAX_GROUPS}`,
    );
  return {
    endpoint: state.tables !== undefined,
    tables: state.tables ?? NO_TABLES,
    nodeAddress: state.nodeAddress,
    groups: [...state.groups].sort((a, b) => a - b),
  };
}

export function sameRecord(a: RecordModel | undefined, b: RecordModel | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.endpoint === b.endpoint &&
    a.nodeAddress === b.nodeAddress &&
    a.tables.length === b.tables.length &&
    a.tables.every((t, i) => t === b.tables[i]) &&
    sameList(a.groups, b.groups) &&
    sameList(a.previous?.tables, b.previous?.tables) &&
    sameList(a.previous?.groups, b.previous?.groups)
  );
}

function sameList(a: readonly number[] | undefined, b: readonly number[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
