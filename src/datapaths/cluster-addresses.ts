/**
 * Who owns an address in a cluster, for interpreters that judge packets across nodes: the
 * (not host-networked) pod holding it, and whether it is a pod's own node. Packets between a pod
 * and its own node never meet the VPP stacks' policy; interpreters need both answers per packet.
 */
import { ipKey, type IpAddress } from '../net/ip.ts';
import type { Cluster, Endpoint } from '../model/types.ts';

interface ClusterAddresses {
  /** The pod (not host-networked) that has this address. */
  readonly podAt: (ip: IpAddress) => Endpoint | undefined;
  /** Whether the address is one of the pod's node's addresses. */
  readonly ownNode: (pod: Endpoint, ip: IpAddress) => boolean;
}

export function clusterAddresses(cluster: Cluster): ClusterAddresses {
  const pods = new Map<string, Endpoint>();
  // The first pod with an address owns it, as a linear search over the endpoints would find.
  for (const endpoint of cluster.endpoints)
    if (!endpoint.hostNetwork)
      for (const ip of endpoint.ips) if (!pods.has(ipKey(ip))) pods.set(ipKey(ip), endpoint);
  const nodes = new Map<string, ReadonlySet<string>>();
  for (const node of cluster.nodes.values()) nodes.set(node.name, new Set(node.addresses.map(ipKey)));
  return {
    podAt: (ip) => pods.get(ipKey(ip)),
    ownNode: (pod, ip) => pod.node !== undefined && (nodes.get(pod.node)?.has(ipKey(ip)) ?? false),
  };
}
