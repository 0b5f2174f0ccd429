/**
 * Addresses outside the cluster that no policy tells apart. The reference evaluator looks at an
 * address that is no pod's and no node's only to ask whether a block holds it (an ipBlock's
 * `cidr` and `except`, a cluster policy's networks, Cilium's CIDRs and `world`). So between two
 * consecutive boundaries — each block's first address and the one after its last — every question
 * has the same answer, and so does the evaluator, but for the address it writes into its reasons.
 * Pods' and nodes' addresses are never put in a class: the evaluator knows them by name.
 *
 * Attribution names each connection once per such class rather than once per address: a pod
 * sweeping addresses outside the cluster then costs the reader a lookup per connection instead
 * of an evaluation (port-classes.ts does the same for ports).
 */
import type { Cidr, IpAddress, IpFamily } from '../net/ip.ts';
import { familyBits, formatIp } from '../net/ip.ts';
import type { Cluster } from '../model/types.ts';

export class AddressClasses {
  /** Per family, sorted and distinct: the first address of each class but the lowest. */
  private readonly boundaries: ReadonlyMap<IpFamily, readonly bigint[]>;

  private constructor(
    boundaries: Map<IpFamily, Set<bigint>>,
    /** Every pod's and node's address, as canonical text (`semantics/match.ts` isClusterAddress's set). */
    private readonly cluster: ReadonlySet<string>,
  ) {
    this.boundaries = new Map(
      [...boundaries].map(([family, set]) => [family, [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))]),
    );
  }

  /** The classes of every block of these clusters' policies (enforced and staged). */
  static of(clusters: readonly Cluster[]): AddressClasses {
    const boundaries = new Map<IpFamily, Set<bigint>>();
    const cluster = new Set<string>();
    const block = (cidr: Cidr): void => {
      let set = boundaries.get(cidr.family);
      if (!set) boundaries.set(cidr.family, (set = new Set()));
      set.add(cidr.base).add(cidr.base + (1n << BigInt(familyBits(cidr.family) - cidr.prefix)));
    };
    for (const clusterOf of clusters) {
      for (const policy of [...clusterOf.policies, ...(clusterOf.staged?.policies ?? [])])
        for (const rule of [...policy.ingress, ...policy.egress])
          for (const peer of rule.peers ?? [])
            if (peer.type === 'ipBlock') [peer.cidr, ...peer.except].forEach(block);
      for (const policy of [...clusterOf.clusterPolicies, ...(clusterOf.staged?.clusterPolicies ?? [])])
        for (const rule of [...policy.ingress, ...policy.egress])
          for (const peer of rule.peers)
            if (peer.type === 'networks' || peer.type === 'outside') peer.cidrs.forEach(block);
      for (const endpoint of clusterOf.endpoints) for (const ip of endpoint.ips) cluster.add(formatIp(ip));
      for (const node of clusterOf.nodes.values()) for (const ip of node.addresses) cluster.add(formatIp(ip));
    }
    return new AddressClasses(boundaries, cluster);
  }

  /**
   * The class of an address (`canonical`: its text as `formatIp` writes it): its family and how
   * many boundaries are at or below it — or undefined for a pod's or a node's address, which is
   * never put in a class.
   */
  classOf(ip: IpAddress, canonical: string): string | undefined {
    if (this.cluster.has(canonical)) return undefined;
    const boundaries = this.boundaries.get(ip.family) ?? [];
    let low = 0;
    let high = boundaries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((boundaries[middle] ?? 0n) <= ip.value) low = middle + 1;
      else high = middle;
    }
    return `v${ip.family}#${low}`;
  }
}
