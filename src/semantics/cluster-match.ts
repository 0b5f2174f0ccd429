/**
 * The matching rules of AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy,
 * written from the API text: which policies apply to a pod, whether a peer matches the other side
 * of a connection, whether a port entry matches, and a rule's ports as a port set.
 */
import { cidrContains, type IpFamily } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import { namedPortTargets, namespaceMatches, policyApplies, policySelects } from '../model/cluster-policy.ts';
import type {
  ClusterPeer,
  ClusterPolicy,
  ClusterPort,
  ClusterRule,
  Endpoint,
  Protocol,
  Tier,
} from '../model/types.ts';
import { MAX_PORT, MIN_PORT, portSetOf, ALL_PORTS, type PortSet } from '../model/port-set.ts';
import { addressIp, isClusterAddress, isOwnNode, memoizedSelection, type ClusterIndex } from './match.ts';
import type { Address } from './types.ts';

/**
 * Policies of one tier that select the endpoint and have rules for the direction (or hold it to
 * the tier there: Calico's `types`, Cilium's default deny), in precedence order.
 */
export function selectingClusterPolicies(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  tier: Tier,
): readonly ClusterPolicy[] {
  if (index.cluster.clusterPolicies.length === 0) return [];
  return memoizedSelection(index, endpoint, `${tier}|${direction}`, () => {
    const namespaceLabels = index.cluster.namespaces.get(endpoint.namespace)?.labels;
    return index.cluster.clusterPolicies.filter(
      (policy) =>
        policy.tier === tier &&
        policyApplies(policy, direction) &&
        policySelects(policy, namespaceLabels, endpoint),
    );
  });
}

/** Index of the first peer of the rule that matches the other side, or -1. */
export function matchingPeer(
  index: ClusterIndex,
  rule: ClusterRule,
  subject: Endpoint,
  other: Address,
  family: IpFamily | undefined,
): number {
  return rule.peers.findIndex((peer) => clusterPeerMatches(index, peer, subject, other, family));
}

export function clusterPeerMatches(
  index: ClusterIndex,
  peer: ClusterPeer,
  subject: Endpoint,
  other: Address,
  family: IpFamily | undefined,
): boolean {
  switch (peer.type) {
    case 'pods': {
      // Host-networked pods are not selected by pods or namespaces peers.
      if (other.kind !== 'endpoint' || other.endpoint.hostNetwork) return false;
      const namespaces = index.cluster.namespaces;
      const otherLabels = namespaces.get(other.endpoint.namespace)?.labels;
      const subjectLabels = namespaces.get(subject.namespace)?.labels ?? {};
      if (!otherLabels || !namespaceMatches(peer.namespaces, otherLabels, subjectLabels)) return false;
      return !peer.podSelector || selectorMatches(peer.podSelector, other.endpoint.labels);
    }
    case 'networks': {
      // Networks match every address, pods' included, as the API says.
      const ip = addressIp(other, family);
      return ip !== undefined && peer.cidrs.some((cidr) => cidrContains(cidr, ip));
    }
    case 'nodes': {
      const ip = addressIp(other, family);
      if (!ip) return false;
      const own = peer.only !== undefined && isOwnNode(index, subject, other);
      if ((peer.only === 'own' && !own) || (peer.only === 'others' && own)) return false;
      for (const node of index.cluster.nodes.values()) {
        if (!node.addresses.some((a) => a.family === ip.family && a.value === ip.value)) continue;
        if (selectorMatches(peer.selector, node.labels)) return true;
      }
      return false;
    }
    case 'outside': {
      // Only what lies outside the cluster: no pod's address (of either kind), no node's.
      if (other.kind === 'endpoint') return false;
      const ip = addressIp(other, family);
      return (
        ip !== undefined && !isClusterAddress(index, ip) && peer.cidrs.some((cidr) => cidrContains(cidr, ip))
      );
    }
    case 'domainNames':
      return (
        other.kind === 'ip' &&
        other.domain !== undefined &&
        peer.names.some((n) => domainMatches(n, other.domain as string))
      );
  }
}

/** `*.example.com` matches names with one or more labels before `example.com`; otherwise exact. */
function domainMatches(pattern: string, name: string): boolean {
  const normalized = name.toLowerCase().replace(/\.$/, '');
  if (!pattern.startsWith('*.')) return normalized === pattern;
  const suffix = pattern.slice(1);
  return normalized.endsWith(suffix) && normalized.length > suffix.length;
}

/** Index of the first port entry matching the destination port, -1 if none; undefined when the rule has no ports (all match). */
export function matchingPort(
  rule: ClusterRule,
  destination: Address,
  protocol: Protocol,
  port: number,
): number | undefined {
  if (!rule.ports) return undefined;
  return rule.ports.findIndex((entry) => clusterPortMatches(entry, destination, protocol, port));
}

function clusterPortMatches(
  entry: ClusterPort,
  destination: Address,
  protocol: Protocol,
  port: number,
): boolean {
  if (entry.type === 'named')
    return namedPortsOf(destination, entry.name, entry.protocol).some(
      (p) => p.protocol === protocol && p.port === port,
    );
  if (entry.protocol !== protocol) return false;
  if (entry.port === undefined) return true;
  return port >= entry.port && port <= (entry.endPort ?? entry.port);
}

/** The rule's ports as a port set, named ports resolved against the destination. */
export function clusterRulePorts(rule: ClusterRule, destination: Address): PortSet {
  if (!rule.ports) return ALL_PORTS;
  return portSetOf(
    rule.ports.flatMap((entry) => {
      if (entry.type === 'named') {
        return namedPortsOf(destination, entry.name, entry.protocol).map((p) => ({
          protocol: p.protocol,
          from: p.port,
          to: p.port,
        }));
      }
      const from = entry.port ?? MIN_PORT;
      const to = entry.port === undefined ? MAX_PORT : (entry.endPort ?? entry.port);
      return [{ protocol: entry.protocol, from, to }];
    }),
  );
}

/**
 * A named port is looked up by name: it means whatever protocol the container declares (or, when
 * the rule names one, that protocol only). Never on a host-network pod: its ports are the host's
 * (pods peers never select one; Calico and Cilium resolve named ports on their endpoints only).
 */
function namedPortsOf(
  destination: Address,
  name: string,
  protocol?: Protocol,
): readonly { protocol: Protocol; port: number }[] {
  if (destination.kind !== 'endpoint' || destination.endpoint.hostNetwork) return [];
  return namedPortTargets(destination.endpoint.ports, name, protocol);
}
