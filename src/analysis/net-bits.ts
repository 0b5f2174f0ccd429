/**
 * Which classes a compiled rule's peer admits, as a bit set over the class representatives,
 * per address family: a group by its members (a named-port partition by the members resolving
 * the name to its number), a CIDR by the representatives' addresses (found by binary search in
 * the sorted addresses, not by testing every one), "any" as every class with an address of the
 * family, an outside block as its classes that are not pods. Computed once per distinct peer.
 */
import { cidrContains, familyBits, type Cidr, type IpAddress, type IpFamily } from '../net/ip.ts';
import type { Endpoint } from '../model/types.ts';
import type { NetRef } from '../model/rule.ts';
import { parseGroupReference } from '../configurator/index.ts';
import type { ClusterState } from '../state/index.ts';
import { wordsFor } from './bit-rows.ts';

export class NetBits {
  private readonly words: number;
  private readonly cache = new Map<string, Uint32Array>();
  private readonly indexOf = new Map<string, number>();
  /** Per family: each class's first address of the family. */
  private readonly address: Record<IpFamily, (IpAddress | undefined)[]>;
  /** Per family: classes with such an address, by address (for CIDR ranges). */
  private readonly sorted: Record<IpFamily, { value: bigint; cls: number }[]>;
  private readonly families: Record<IpFamily, Uint32Array>;

  constructor(
    private readonly state: ClusterState,
    private readonly representatives: readonly Endpoint[],
  ) {
    this.words = wordsFor(representatives.length);
    representatives.forEach((rep, i) => this.indexOf.set(rep.id, i));
    const first = (family: IpFamily) =>
      representatives.map((rep) => rep.ips.find((ip) => ip.family === family));
    this.address = { 4: first(4), 6: first(6) };
    const sortedOf = (family: IpFamily) =>
      this.address[family]
        .flatMap((ip, cls) => (ip ? [{ value: ip.value, cls }] : []))
        .sort((x, y) => (x.value < y.value ? -1 : x.value > y.value ? 1 : x.cls - y.cls));
    this.sorted = { 4: sortedOf(4), 6: sortedOf(6) };
    const has = (family: IpFamily): Uint32Array => {
      const row = new Uint32Array(this.words);
      for (const { cls } of this.sorted[family])
        row[cls >>> 5] = (row[cls >>> 5] as number) | (1 << (cls & 31));
      return row;
    };
    this.families = { 4: has(4), 6: has(6) };
  }

  /** Classes with an address of the family. */
  hasFamily(family: IpFamily): Uint32Array {
    return this.families[family];
  }

  classHasFamily(cls: number, family: IpFamily): boolean {
    return this.address[family][cls] !== undefined;
  }

  /** Host-network classes on the node (a pod's own node, as the reference evaluator tells it). */
  hostNetworkOn(node: string, family: IpFamily): Uint32Array {
    return this.cached(`node|${family}|${node}`, (row) =>
      this.representatives.forEach((rep, cls) => {
        if (rep.hostNetwork && rep.node === node && this.address[family][cls]) set(row, cls);
      }),
    );
  }

  of(net: NetRef, family: IpFamily): Uint32Array {
    switch (net.kind) {
      case 'any':
        return this.families[family];
      case 'cidr':
        return this.cached(`cidr|${family}|${net.cidr.text}`, (row) => this.addCidr(row, net.cidr, family));
      case 'group':
        return this.cached(`group|${family}|${net.group}`, (row) => this.addGroup(row, net.group, family));
      case 'outside':
        return this.cached(`outside|${family}|${net.cidr.text}|${net.pods}`, (row) => {
          const pods = this.of({ kind: 'group', group: net.pods }, family);
          this.addCidr(row, net.cidr, family);
          for (let w = 0; w < row.length; w++) row[w] = (row[w] as number) & ~(pods[w] as number);
        });
    }
  }

  private cached(key: string, fill: (row: Uint32Array) => void): Uint32Array {
    let row = this.cache.get(key);
    if (!row) {
      row = new Uint32Array(this.words);
      fill(row);
      this.cache.set(key, row);
    }
    return row;
  }

  private addCidr(row: Uint32Array, cidr: Cidr, family: IpFamily): void {
    if (cidr.family !== family) return;
    const sorted = this.sorted[family];
    const last = cidr.base + (1n << BigInt(familyBits(family) - cidr.prefix)) - 1n;
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((sorted[mid] as { value: bigint }).value < cidr.base) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < sorted.length; i++) {
      const entry = sorted[i] as { value: bigint; cls: number };
      if (entry.value > last) break;
      set(row, entry.cls);
    }
  }

  private addGroup(row: Uint32Array, reference: string, family: IpFamily): void {
    const { key, port } = parseGroupReference(reference);
    const group = this.state.group(key);
    if (!group) return;
    const blocks = group.spec.ipBlock?.cidr;
    for (const member of group.members.values()) {
      if (port !== undefined && member.port !== port) continue;
      const cls = this.indexOf.get(member.pod);
      if (cls === undefined) continue;
      const ip = this.address[family][cls];
      if (!ip) continue;
      // A named port through an ipBlock: the address of this family must lie in the block.
      if (blocks && !blocks.some((c) => cidrContains(c, ip))) continue;
      set(row, cls);
    }
  }
}

function set(row: Uint32Array, index: number): void {
  row[index >>> 5] = (row[index >>> 5] as number) | (1 << (index & 31));
}
