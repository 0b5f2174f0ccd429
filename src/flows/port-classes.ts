/**
 * Ports no policy tells apart. The reference evaluator looks at a connection's port only to ask
 * whether it lies in a rule's port or range (`[port, endPort]`, every port when absent) or equals
 * what a named port means at the destination (a container port's number). So between two
 * consecutive boundaries — each range's first port and the port after its last, each named
 * container port and the one after it — every question has the same answer, and so does the
 * evaluator, but for the port it writes into its reasons.
 *
 * Attribution names each connection once per such class rather than once per port: a port scan
 * (every connection to a new port, tens of thousands a second on a busy node) then costs the
 * reader a lookup per connection instead of an evaluation.
 */
import type { Cluster, ClusterPort, PolicyPort } from '../model/types.ts';

export class PortClasses {
  /** Sorted, distinct: the first port of each class but the lowest. */
  private readonly boundaries: Int32Array;

  private constructor(boundaries: Iterable<number>) {
    this.boundaries = Int32Array.from(new Set(boundaries)).sort();
  }

  /** The classes of the cluster's policies, enforced and staged. */
  static of(cluster: Cluster): PortClasses {
    const boundaries: number[] = [];
    const range = (first: number, last: number): void => {
      boundaries.push(first, last + 1);
    };
    const policyPort = (port: PolicyPort): void => {
      if (typeof port.port === 'number') range(port.port, port.endPort ?? port.port);
    };
    const clusterPort = (port: ClusterPort): void => {
      if (port.type === 'number' && port.port !== undefined) range(port.port, port.endPort ?? port.port);
    };
    for (const policy of [...cluster.policies, ...(cluster.staged?.policies ?? [])])
      for (const rule of [...policy.ingress, ...policy.egress])
        for (const port of rule.ports ?? []) policyPort(port);
    for (const policy of [...cluster.clusterPolicies, ...(cluster.staged?.clusterPolicies ?? [])])
      for (const rule of [...policy.ingress, ...policy.egress])
        for (const port of rule.ports ?? []) clusterPort(port);
    // A named port means a container port's number, whichever pod it is asked of.
    for (const endpoint of cluster.endpoints)
      for (const port of endpoint.ports) if (port.name !== undefined) range(port.port, port.port);
    return new PortClasses(boundaries);
  }

  /** The class of a port: how many boundaries are at or below it. */
  classOf(port: number): number {
    return countAtOrBelow(this.boundaries, port);
  }
}

/** How many values of a sorted list are at or below `value` (a binary search). */
export function countAtOrBelow<T extends number | bigint>(sorted: ArrayLike<T>, value: T): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] as T) <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}
