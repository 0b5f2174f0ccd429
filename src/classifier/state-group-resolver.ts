/**
 * The store's address groups as a classifier group layer: each group a table uses gets a small
 * number, and every member address's record the sorted list of group numbers it belongs to.
 * Tables then hold one bitmap per group instead of one per member address, so a table's size
 * and build time follow its rules, not the pods its peers select — and a pod joining or leaving
 * a group updates this index, not the tables. Named-port partitions (`key#n`) are groups of their own: the members
 * whose name resolves to n.
 */
import type { IpAddress } from '../net/ip.ts';
import type { AddressGroup, ReadonlyStore } from '../state/index.ts';
import { PARTITION_SEPARATOR } from '../configurator/types.ts';
import type { GroupResolver } from './direction-table.ts';
import { AddressGroupIndex } from './address-groups.ts';
import { TABLE_GROUPS, type AddressRecords, type GroupList } from './address-records.ts';

export class StateGroupResolver implements GroupResolver {
  private readonly ids = new Map<string, number>();
  private readonly labels: string[] = [];
  /** The store's group object each number was filled from: a group dropped and made again is a new object. */
  private readonly filledFrom: (AddressGroup | undefined)[] = [];
  private readonly index: AddressGroupIndex;

  /**
   * `list`: which of the records' group lists the members go to — NetworkPolicy tables' and tier
   * tables' groups are kept apart (address-records.ts says why), each with its own numbers.
   */
  constructor(
    private readonly state: ReadonlyStore,
    records: AddressRecords,
    list: GroupList = TABLE_GROUPS,
  ) {
    this.index = new AddressGroupIndex(records, list);
  }

  /** The number of a group or partition reference, registering its members on first use. */
  idOf(reference: string): number {
    const known = this.ids.get(reference);
    if (known !== undefined) {
      // The group may have been dropped (its last policy went) and made again since it was filled.
      if (this.filledFrom[known] !== this.groupOf(reference)) this.refill(known);
      return known;
    }
    const id = this.labels.length;
    this.ids.set(reference, id);
    this.labels.push(reference);
    this.refill(id);
    return id;
  }

  /** Members changed: every registered reference to these groups is refreshed. */
  groupsChanged(groups: ReadonlySet<string>): void {
    for (const [reference, id] of this.ids) {
      const separator = reference.indexOf(PARTITION_SEPARATOR);
      if (!groups.has(separator < 0 ? reference : reference.slice(0, separator))) continue;
      this.refill(id);
    }
  }

  private refill(id: number): void {
    const reference = this.labels[id] as string;
    this.index.clear(id);
    this.index.add(id, this.members(reference));
    this.filledFrom[id] = this.groupOf(reference);
  }

  private groupOf(reference: string): AddressGroup | undefined {
    const separator = reference.indexOf(PARTITION_SEPARATOR);
    return this.state.group(separator < 0 ? reference : reference.slice(0, separator));
  }

  /** The addresses a numbered group or partition holds now. */
  addressesOf(group: number): readonly IpAddress[] {
    return this.index.membersOf(group);
  }

  groupLabel(group: number): string {
    return this.labels[group] ?? String(group);
  }

  private members(reference: string): IpAddress[] {
    return referenceMembers(this.state, reference);
  }
}

/**
 * The addresses a group reference matches: a group's members' addresses, or for a named-port
 * partition (`key#n`) those of the members resolving the name to n. Shared with the eBPF
 * datapath, whose address records hold the same memberships.
 */
export function referenceMembers(state: ReadonlyStore, reference: string): IpAddress[] {
  const separator = reference.indexOf(PARTITION_SEPARATOR);
  const key = separator < 0 ? reference : reference.slice(0, separator);
  const port = separator < 0 ? undefined : Number(reference.slice(separator + 1));
  const group = state.group(key);
  const ips: IpAddress[] = [];
  for (const member of group?.members.values() ?? []) {
    if (port !== undefined && member.port !== port) continue;
    // ipBlock-scoped named-port groups hold pods partly inside: only addresses inside count.
    for (const ip of member.ips) if (group?.contains(ip, port)) ips.push(ip);
  }
  return ips;
}
