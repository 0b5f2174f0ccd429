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
import type { IpAddress, IpFamily } from '../net/ip.ts';
import { formatIp } from '../net/ip.ts';
import type { Cluster } from '../model/types.ts';
import { addressCuts } from '../semantics/index.ts';
import { countAtOrBelow } from './port-classes.ts';

export class AddressClasses {
  private constructor(
    /** Per family, sorted: the first address of each class but the lowest (`addressCuts`). */
    private readonly boundaries: ReadonlyMap<IpFamily, readonly bigint[]>,
    /** Every pod's and node's address, as canonical text (`semantics/match.ts` isClusterAddress's set). */
    private readonly cluster: ReadonlySet<string>,
  ) {}

  /** The classes of the blocks of the cluster's policies, enforced and staged. */
  static of(cluster: Cluster): AddressClasses {
    const cuts = addressCuts(cluster.staged ? [cluster, cluster.staged] : [cluster]);
    const boundaries = new Map(
      [...cuts].map(
        ([family, set]) => [family, [...set].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))] as const,
      ),
    );
    const addresses = new Set<string>();
    for (const endpoint of cluster.endpoints) for (const ip of endpoint.ips) addresses.add(formatIp(ip));
    for (const node of cluster.nodes.values()) for (const ip of node.addresses) addresses.add(formatIp(ip));
    return new AddressClasses(boundaries, addresses);
  }

  /**
   * The class of an address (`canonical`: its text as `formatIp` writes it): its family and how
   * many boundaries are at or below it — or undefined for a pod's or a node's address, which is
   * never put in a class.
   */
  classOf(ip: IpAddress, canonical: string): string | undefined {
    if (this.cluster.has(canonical)) return undefined;
    return `v${ip.family}#${countAtOrBelow(this.boundaries.get(ip.family) ?? [], ip.value)}`;
  }
}
