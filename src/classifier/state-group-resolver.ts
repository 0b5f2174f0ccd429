/**
 * The store's address groups as a classifier group layer: each group a table uses gets a small
 * number, and every member address the list of group numbers it belongs to. Tables then hold one
 * bitmap per group instead of one per member address, so a table's size and build time follow
 * its rules, not the pods its peers select — and a pod joining or leaving a group updates this
 * index, not the tables. Named-port partitions (`key#n`) are groups of their own: the members
 * whose name resolves to n.
 */
import type { IpAddress } from '../net/ip.ts';
import type { ClusterState } from '../state/index.ts';
import { PARTITION_SEPARATOR } from '../configurator/types.ts';
import type { GroupResolver } from './direction-table.ts';
import { addressWords } from './lpm-trie.ts';

const v6Key = (words: Uint32Array): string => `${words[0]},${words[1]},${words[2]},${words[3]}`;

export class StateGroupResolver implements GroupResolver {
  private readonly ids = new Map<string, number>();
  private readonly labels: string[] = [];
  /** Per group number, the addresses it currently adds itself to (to take it back out). */
  private readonly contributed: { v4: number[]; v6: string[] }[] = [];
  private readonly byV4 = new Map<number, number[]>();
  private readonly byV6 = new Map<string, number[]>();
  private readonly words = new Uint32Array(4);

  constructor(private readonly state: ClusterState) {}

  /** The number of a group or partition reference, registering its members on first use. */
  idOf(reference: string): number {
    const known = this.ids.get(reference);
    if (known !== undefined) return known;
    const id = this.labels.length;
    this.ids.set(reference, id);
    this.labels.push(reference);
    this.contributed.push({ v4: [], v6: [] });
    this.fill(id);
    return id;
  }

  /** Members changed: every registered reference to these groups is refreshed. */
  groupsChanged(groups: ReadonlySet<string>): void {
    for (const [reference, id] of this.ids) {
      const separator = reference.indexOf(PARTITION_SEPARATOR);
      const group = separator < 0 ? reference : reference.slice(0, separator);
      if (!groups.has(group)) continue;
      this.clear(id);
      this.fill(id);
    }
  }

  groupsOfV4(address: number): readonly number[] | undefined {
    return this.byV4.get(address);
  }

  groupsOfV6(words: Uint32Array): readonly number[] | undefined {
    return this.byV6.get(v6Key(words));
  }

  groupLabel(group: number): string {
    return this.labels[group] ?? String(group);
  }

  private members(reference: string): IpAddress[] {
    const separator = reference.indexOf(PARTITION_SEPARATOR);
    const key = separator < 0 ? reference : reference.slice(0, separator);
    const port = separator < 0 ? undefined : Number(reference.slice(separator + 1));
    const group = this.state.group(key);
    const ips: IpAddress[] = [];
    for (const member of group?.members.values() ?? []) {
      if (port !== undefined && member.port !== port) continue;
      // ipBlock-scoped named-port groups hold pods partly inside: only addresses inside count.
      for (const ip of member.ips) if (group?.contains(ip, port)) ips.push(ip);
    }
    return ips;
  }

  private fill(id: number): void {
    const mine = this.contributed[id] as { v4: number[]; v6: string[] };
    for (const ip of this.members(this.labels[id] as string)) {
      if (ip.family === 4) {
        const key = Number(ip.value);
        add(this.byV4, key, id);
        mine.v4.push(key);
      } else {
        const key = v6Key(addressWords(6, ip.value, this.words));
        add(this.byV6, key, id);
        mine.v6.push(key);
      }
    }
  }

  private clear(id: number): void {
    const mine = this.contributed[id] as { v4: number[]; v6: string[] };
    for (const key of mine.v4) remove(this.byV4, key, id);
    for (const key of mine.v6) remove(this.byV6, key, id);
    mine.v4 = [];
    mine.v6 = [];
  }
}

function add<K>(map: Map<K, number[]>, key: K, id: number): void {
  const list = map.get(key);
  if (!list) map.set(key, [id]);
  else if (!list.includes(id)) list.push(id);
}

function remove<K>(map: Map<K, number[]>, key: K, id: number): void {
  const list = map.get(key);
  if (!list) return;
  const at = list.indexOf(id);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) map.delete(key);
}
