/**
 * Which classes a compiled rule's peer admits, as an interval set over class positions, per
 * address family: a group by its members (a named-port partition by the members resolving the
 * name to its number), a CIDR by the representatives' addresses, "any" as every class with an
 * address of the family. Classes are numbered in the order of their first IPv4 address (then
 * IPv6, then none), so an IPv4 CIDR is one interval found by binary search; IPv6 CIDRs and
 * groups are built from their members. Computed once per distinct peer.
 */
import { cidrContains, familyBits, type Cidr, type IpAddress, type IpFamily } from '../../net/ip.ts';
import type { Endpoint } from '../../model/types.ts';
import type { NetRef } from '../../model/rule.ts';
import { parseGroupReference } from '../../configurator/index.ts';
import type { ClusterState } from '../../state/index.ts';
import { EMPTY_SET, setOf, subtractSets, type IntervalSet } from './interval-set.ts';

const compareBig = (x: bigint, y: bigint): number => (x < y ? -1 : x > y ? 1 : 0);

/** The address order of classes: `position[cls]`, and the class at each position. */
export function addressOrder(representatives: readonly Endpoint[]): {
  position: Int32Array;
  classAt: Int32Array;
} {
  const first = (rep: Endpoint, family: IpFamily): bigint | undefined =>
    rep.ips.find((ip) => ip.family === family)?.value;
  const order = representatives
    .map((rep, cls) => ({ cls, v4: first(rep, 4), v6: first(rep, 6) }))
    .sort((a, b) => {
      // IPv4 first, by address; then IPv6-only by address; then classes without addresses.
      const rank = (x: { v4?: bigint; v6?: bigint }): number =>
        x.v4 !== undefined ? 0 : x.v6 !== undefined ? 1 : 2;
      const ra = rank(a);
      const rb = rank(b);
      if (ra !== rb) return ra - rb;
      if (ra === 0) return compareBig(a.v4 as bigint, b.v4 as bigint) || a.cls - b.cls;
      if (ra === 1) return compareBig(a.v6 as bigint, b.v6 as bigint) || a.cls - b.cls;
      return a.cls - b.cls;
    });
  const classAt = Int32Array.from(order.map((o) => o.cls));
  const position = new Int32Array(representatives.length);
  classAt.forEach((cls, pos) => (position[cls] = pos));
  return { position, classAt };
}

export class ClassNets {
  private readonly cache = new Map<string, IntervalSet>();
  private readonly classOfPod = new Map<string, number>();
  /** Per family: each class's first address of the family. */
  private readonly address: Record<IpFamily, (IpAddress | undefined)[]>;
  /** Per family: positions of classes with such an address, sorted by that address. */
  private readonly sorted: Record<IpFamily, { value: bigint; pos: number }[]>;
  private readonly families: Record<IpFamily, IntervalSet>;
  private hostNetwork?: Record<IpFamily, Map<string, number[]>>;
  private readonly byNet: Record<IpFamily, WeakMap<NetRef, IntervalSet>> = {
    4: new WeakMap(),
    6: new WeakMap(),
  };

  constructor(
    private readonly state: ClusterState,
    private readonly representatives: readonly Endpoint[],
    private readonly position: Int32Array,
  ) {
    representatives.forEach((rep, cls) => this.classOfPod.set(rep.id, cls));
    const first = (family: IpFamily) =>
      representatives.map((rep) => rep.ips.find((ip) => ip.family === family));
    this.address = { 4: first(4), 6: first(6) };
    const sortedOf = (family: IpFamily) =>
      this.address[family]
        .flatMap((ip, cls) => (ip ? [{ value: ip.value, pos: position[cls] as number }] : []))
        .sort((x, y) => compareBig(x.value, y.value) || x.pos - y.pos);
    this.sorted = { 4: sortedOf(4), 6: sortedOf(6) };
    this.families = {
      4: setOf(this.sorted[4].map((e) => e.pos)),
      6: setOf(this.sorted[6].map((e) => e.pos)),
    };
  }

  /** Classes with an address of the family. */
  hasFamily(family: IpFamily): IntervalSet {
    return this.families[family];
  }

  classHasFamily(cls: number, family: IpFamily): boolean {
    return this.address[family][cls] !== undefined;
  }

  /** Host-network classes on the node (a pod's own node, as the reference evaluator tells it). */
  hostNetworkOn(node: string, family: IpFamily): IntervalSet {
    this.hostNetwork ??= this.hostNetworkByNode();
    const positions = this.hostNetwork[family].get(node);
    if (!positions) return EMPTY_SET;
    return this.cached(`node|${family}|${node}`, () => setOf(positions));
  }

  /** Per family and node, the positions of host-network classes with an address of the family. */
  private hostNetworkByNode(): Record<IpFamily, Map<string, number[]>> {
    const byNode: Record<IpFamily, Map<string, number[]>> = { 4: new Map(), 6: new Map() };
    this.representatives.forEach((rep, cls) => {
      if (!rep.hostNetwork || rep.node === undefined) return;
      for (const family of [4, 6] as const) {
        if (!this.address[family][cls]) continue;
        const list = byNode[family].get(rep.node);
        if (list) list.push(this.position[cls] as number);
        else byNode[family].set(rep.node, [this.position[cls] as number]);
      }
    });
    return byNode;
  }

  of(net: NetRef, family: IpFamily): IntervalSet {
    // Rules share their net objects: most lookups end here, without building a key.
    const byNet = this.byNet[family];
    let set = byNet.get(net);
    if (!set) byNet.set(net, (set = this.lookup(net, family)));
    return set;
  }

  private lookup(net: NetRef, family: IpFamily): IntervalSet {
    switch (net.kind) {
      case 'any':
        return this.families[family];
      case 'cidr':
        return this.cached(`cidr|${family}|${net.cidr.text}`, () => this.cidrSet(net.cidr, family));
      case 'group':
        return this.cached(`group|${family}|${net.group}`, () => this.groupSet(net.group, family));
      case 'outside':
        // An outside block: its classes that are not the pods of its group.
        return this.cached(`outside|${family}|${net.cidr.text}|${net.pods}`, () =>
          subtractSets(this.cidrSet(net.cidr, family), this.of({ kind: 'group', group: net.pods }, family)),
        );
    }
  }

  private cached(key: string, make: () => IntervalSet): IntervalSet {
    let set = this.cache.get(key);
    if (!set) this.cache.set(key, (set = make()));
    return set;
  }

  private cidrSet(cidr: Cidr, family: IpFamily): IntervalSet {
    if (cidr.family !== family) return EMPTY_SET;
    const sorted = this.sorted[family];
    const last = cidr.base + (1n << BigInt(familyBits(family) - cidr.prefix)) - 1n;
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((sorted[mid] as { value: bigint }).value < cidr.base) low = mid + 1;
      else high = mid;
    }
    const members: number[] = [];
    for (let i = low; i < sorted.length; i++) {
      const entry = sorted[i] as { value: bigint; pos: number };
      if (entry.value > last) break;
      members.push(entry.pos);
    }
    return setOf(members);
  }

  private groupSet(reference: string, family: IpFamily): IntervalSet {
    const { key, port } = parseGroupReference(reference);
    const group = this.state.group(key);
    if (!group) return EMPTY_SET;
    const blocks = group.spec.ipBlock?.cidr;
    const members: number[] = [];
    for (const member of group.members.values()) {
      if (port !== undefined && member.port !== port) continue;
      const cls = this.classOfPod.get(member.pod);
      if (cls === undefined) continue;
      const ip = this.address[family][cls];
      if (!ip) continue;
      // A named port through an ipBlock: the address of this family must lie in the block.
      if (blocks && !blocks.some((c) => cidrContains(c, ip))) continue;
      members.push(this.position[cls] as number);
    }
    return setOf(members);
  }
}
