/**
 * Address → group numbers, the index behind a group layer (see DirectionTable.useGroups):
 * numbered groups add their member addresses to the addresses' records (a sorted list of group
 * numbers each), and can take them back out when members change.
 */
import type { IpAddress } from '../net/ip.ts';
import { TABLE_GROUPS, type AddressRecords, type GroupList } from './address-records.ts';

export class AddressGroupIndex {
  /** Per group number, the addresses it added (to take it back out). */
  private readonly contributed = new Map<number, IpAddress[]>();

  /** `list`: which of the records' group lists this index fills (see address-records.ts). */
  constructor(
    private readonly records: AddressRecords,
    private readonly list: GroupList = TABLE_GROUPS,
  ) {}

  add(group: number, addresses: Iterable<IpAddress>): void {
    let mine = this.contributed.get(group);
    if (!mine) this.contributed.set(group, (mine = []));
    for (const ip of addresses) if (this.records.addGroup(ip, group, this.list)) mine.push(ip);
  }

  /** The addresses the group added (those it holds now). */
  membersOf(group: number): readonly IpAddress[] {
    return this.contributed.get(group) ?? [];
  }

  clear(group: number): void {
    for (const ip of this.contributed.get(group) ?? []) this.records.removeGroup(ip, group, this.list);
    this.contributed.delete(group);
  }
}
