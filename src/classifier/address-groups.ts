/**
 * Address → group numbers, the index behind a group layer (see DirectionTable.useGroups):
 * numbered groups add their member addresses, and can take them back out when members change.
 */
import type { IpAddress } from '../net/ip.ts';
import { addressWords } from './lpm-trie.ts';

const v6Key = (words: Uint32Array): string => `${words[0]},${words[1]},${words[2]},${words[3]}`;

export class AddressGroupIndex {
  private readonly byV4 = new Map<number, number[]>();
  private readonly byV6 = new Map<string, number[]>();
  /** Per group number, the addresses it added (to take it back out). */
  private readonly contributed = new Map<number, { v4: number[]; v6: string[] }>();
  private readonly words = new Uint32Array(4);

  add(group: number, addresses: Iterable<IpAddress>): void {
    const mine = this.contributed.get(group) ?? { v4: [], v6: [] };
    this.contributed.set(group, mine);
    for (const ip of addresses) {
      if (ip.family === 4) {
        const key = Number(ip.value);
        if (insert(this.byV4, key, group)) mine.v4.push(key);
      } else {
        const key = v6Key(addressWords(6, ip.value, this.words));
        if (insert(this.byV6, key, group)) mine.v6.push(key);
      }
    }
  }

  clear(group: number): void {
    const mine = this.contributed.get(group);
    if (!mine) return;
    for (const key of mine.v4) remove(this.byV4, key, group);
    for (const key of mine.v6) remove(this.byV6, key, group);
    this.contributed.delete(group);
  }

  groupsOfV4(address: number): readonly number[] | undefined {
    return this.byV4.get(address);
  }

  groupsOfV6(words: Uint32Array): readonly number[] | undefined {
    return this.byV6.get(v6Key(words));
  }
}

/** Adds the group to the address's list; false when it was there already. */
function insert<K>(map: Map<K, number[]>, key: K, group: number): boolean {
  const list = map.get(key);
  if (!list) {
    map.set(key, [group]);
    return true;
  }
  if (list.includes(group)) return false;
  list.push(group);
  return true;
}

function remove<K>(map: Map<K, number[]>, key: K, group: number): void {
  const list = map.get(key);
  if (!list) return;
  const at = list.indexOf(group);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) map.delete(key);
}
