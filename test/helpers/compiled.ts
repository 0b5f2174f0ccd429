/**
 * Helpers for testing compiled paths against the reference evaluator at packet level.
 */
import { formatIp, parseIp, type IpAddress } from '../../src/net/ip.ts';
import type { Cluster, Endpoint, Protocol } from '../../src/model/types.ts';
import { evaluate, indexCluster } from '../../src/semantics/index.ts';
import type { Address } from '../../src/semantics/types.ts';
import assert from 'node:assert/strict';
import { EXTERNAL_IPS, SAMPLE_PORTS } from './arbitraries.ts';
import type { Packet } from '../../src/configurator/index.ts';

export interface ProbeAddress {
  readonly ip: IpAddress;
  readonly label: string;
}

/** Every pod address, every node address and the fixed outside addresses. */
export function probeAddresses(cluster: Cluster): ProbeAddress[] {
  const seen = new Map<string, ProbeAddress>();
  const add = (ip: IpAddress, label: string): void => {
    const key = `${ip.family}:${formatIp(ip)}`;
    if (!seen.has(key)) seen.set(key, { ip, label });
  };
  for (const e of cluster.endpoints) for (const ip of e.ips) add(ip, `${e.id}@${formatIp(ip)}`);
  for (const node of cluster.nodes.values())
    for (const ip of node.addresses) add(ip, `node ${node.name}@${formatIp(ip)}`);
  for (const text of EXTERNAL_IPS) {
    const parsed = parseIp(text);
    if (parsed.ok) add(parsed.value, text);
  }
  return [...seen.values()];
}

/**
 * The reference verdict for a packet: addresses resolve to the pod that owns them; a node
 * address stands for the node and for every host-network pod on it (a connection to it reaches
 * whichever of them listens on the port, so it is allowed when any of them allows it).
 */
export function referenceAllows(
  cluster: Cluster,
  src: IpAddress,
  dst: IpAddress,
  protocol: Protocol,
  port: number,
): boolean {
  const index = indexCluster(cluster);
  const srcAddresses = addressesAt(cluster, src);
  const dstAddresses = addressesAt(cluster, dst);
  const srcAddress = srcAddresses[0] as Address;
  return dstAddresses.some(
    (dstAddress) =>
      evaluate(index, { src: srcAddress, dst: dstAddress, protocol, port, family: src.family }).allowed,
  );
}

function addressesAt(cluster: Cluster, ip: IpAddress): Address[] {
  const same = (e: Endpoint): boolean => e.ips.some((a) => a.family === ip.family && a.value === ip.value);
  const pod = cluster.endpoints.find((e) => !e.hostNetwork && same(e));
  if (pod) return [{ kind: 'endpoint', endpoint: pod }];
  const node = [...cluster.nodes.values()].find((n) =>
    n.addresses.some((a) => a.family === ip.family && a.value === ip.value),
  );
  const hostPods = cluster.endpoints.filter((e) => e.hostNetwork && same(e));
  return [
    { kind: 'ip', ip, ...(node ? { node: node.name } : {}) },
    ...hostPods.map((endpoint) => ({ kind: 'endpoint' as const, endpoint })),
  ];
}

/**
 * Asserts that a compiled verdict equals the reference verdict for every packet between the
 * probe addresses (same family), for every sample port and protocol.
 */
export function assertAgreesWithReference(
  cluster: Cluster,
  compiled: (packet: Packet) => boolean,
  label = '',
  skip?: (src: IpAddress, dst: IpAddress) => boolean,
): void {
  const addresses = probeAddresses(cluster);
  for (const src of addresses) {
    for (const dst of addresses) {
      if (src.ip.family !== dst.ip.family || skip?.(src.ip, dst.ip)) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
        const actual = compiled({ src: src.ip, dst: dst.ip, protocol, port });
        assert.equal(actual, expected, `${label}${src.label} → ${dst.label} ${protocol}/${port}`);
      }
    }
  }
}

/** Where a pod and its node stand, for the path a packet takes through a datapath. */
export function topology(cluster: Cluster) {
  const same = (a: IpAddress, b: IpAddress): boolean => a.family === b.family && a.value === b.value;
  return {
    podAt: (ip: IpAddress): Endpoint | undefined =>
      cluster.endpoints.find((e) => !e.hostNetwork && e.ips.some((a) => same(a, ip))),
    ownNode: (pod: Endpoint, ip: IpAddress): boolean =>
      !!pod.node && (cluster.nodes.get(pod.node)?.addresses.some((a) => same(a, ip)) ?? false),
  };
}

/**
 * Traffic between a pod and its own node, which the VPP stacks never police (the helpers let it
 * through before any table). Under ordered cluster policy the reference judges it (Admin and
 * Baseline rules apply to it), so comparisons of those datapaths leave it out.
 */
export function podAndOwnNode(cluster: Cluster): (src: IpAddress, dst: IpAddress) => boolean {
  const { podAt, ownNode } = topology(cluster);
  const podWithOwnNode = (pod: IpAddress, other: IpAddress): boolean => {
    const endpoint = podAt(pod);
    return endpoint !== undefined && ownNode(endpoint, other);
  };
  return (src, dst) => podWithOwnNode(src, dst) || podWithOwnNode(dst, src);
}
