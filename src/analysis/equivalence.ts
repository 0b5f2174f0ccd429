/**
 * Equivalence classes of endpoints: two endpoints that no policy can tell apart (same namespace,
 * same values for every label key any selector reads, same named ports, same answers to every
 * ipBlock, same host-network status and, where it matters, the same node) get the same verdict
 * for every connection. The matrix evaluates one representative pair per class pair, which keeps
 * large clusters fast without changing any answer.
 */
import { cidrContains } from '../net/ip.ts';
import type { Cluster, Endpoint, IpBlockPeer, LabelSelector } from '../model/types.ts';

export interface EndpointClasses {
  /** Class number of each endpoint, in the order given. */
  readonly classOf: Int32Array;
  /** One representative endpoint per class. */
  readonly representatives: readonly Endpoint[];
}

export function endpointClasses(
  cluster: Cluster,
  endpoints: readonly Endpoint[],
  grouping = true,
): EndpointClasses {
  if (!grouping) return { classOf: Int32Array.from(endpoints.keys()), representatives: endpoints };
  const labelKeys = new Set<string>();
  const ipBlocks = new Map<string, IpBlockPeer>();
  const addSelector = (selector: LabelSelector | undefined): void => {
    for (const r of selector?.requirements ?? []) labelKeys.add(r.key);
  };
  for (const policy of cluster.policies) {
    addSelector(policy.podSelector);
    for (const rule of [...policy.ingress, ...policy.egress]) {
      for (const peer of rule.peers ?? []) {
        if (peer.type === 'selector') addSelector(peer.podSelector);
        else ipBlocks.set(`${peer.cidr.text}-${peer.except.map((c) => c.text).join(',')}`, peer);
      }
    }
  }
  // Cluster policies: subject and peer pod selectors, and networks as ipBlocks. Namespace
  // selectors need nothing: the namespace is part of the signature. Nodes peers match node
  // addresses, which only host-network endpoints have, and those are told apart by node below.
  for (const policy of cluster.clusterPolicies) {
    addSelector(policy.subject.podSelector);
    for (const rule of [...policy.ingress, ...policy.egress]) {
      for (const peer of rule.peers) {
        if (peer.type === 'pods') addSelector(peer.podSelector);
        if (peer.type !== 'networks') continue;
        for (const cidr of peer.cidrs) ipBlocks.set(`${cidr.text}-`, { type: 'ipBlock', cidr, except: [] });
      }
    }
  }
  const sortedKeys = [...labelKeys].sort();
  const blocks = [...ipBlocks.values()];
  // The node only matters for node-local traffic and nodes peers, i.e. when host-network endpoints exist.
  const nodeMatters = endpoints.some((e) => e.hostNetwork);

  const classByKey = new Map<string, number>();
  const representatives: Endpoint[] = [];
  const classOf = new Int32Array(endpoints.length);
  endpoints.forEach((endpoint, i) => {
    const key = signature(endpoint, sortedKeys, blocks, nodeMatters);
    let cls = classByKey.get(key);
    if (cls === undefined) {
      cls = representatives.length;
      classByKey.set(key, cls);
      representatives.push(endpoint);
    }
    classOf[i] = cls;
  });
  return { classOf, representatives };
}

function signature(
  endpoint: Endpoint,
  labelKeys: readonly string[],
  blocks: readonly IpBlockPeer[],
  nodeMatters: boolean,
): string {
  const labels = labelKeys.map((k) => (k in endpoint.labels ? `=${endpoint.labels[k]}` : '-')).join('\u0001');
  const ports = endpoint.ports
    .filter((p) => p.name !== undefined)
    .map((p) => `${p.name}/${p.protocol}/${p.port}`)
    .sort()
    .join(',');
  const families = [...new Set(endpoint.ips.map((ip) => ip.family))].sort().join('');
  const ipAnswers = endpoint.ips
    .map(
      (ip) =>
        `${ip.family}:${blocks.map((b) => (cidrContains(b.cidr, ip) && !b.except.some((e) => cidrContains(e, ip)) ? '1' : '0')).join('')}`,
    )
    .sort()
    .join('|');
  return [
    endpoint.namespace,
    endpoint.hostNetwork ? 'H' : 'P',
    nodeMatters ? (endpoint.node ?? '') : '',
    labels,
    ports,
    families,
    ipAnswers,
  ].join('\u0000');
}
