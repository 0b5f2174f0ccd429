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
    return tierCandidates(index, tier, endpoint.namespace).filter(
      (policy) => policyApplies(policy, direction) && policySelects(policy, namespaceLabels, endpoint),
    );
  });
}

/** Per cluster, per tier: its policies without a namespace, and those of each namespace, with their place. */
interface TierPolicies {
  readonly global: readonly Placed[];
  readonly byNamespace: ReadonlyMap<string, readonly Placed[]>;
}
type Placed = { readonly at: number; readonly policy: ClusterPolicy };
const tierPolicies = new WeakMap<ClusterIndex['cluster'], Map<Tier, TierPolicies>>();

function indexTiers(policies: readonly ClusterPolicy[]): Map<Tier, TierPolicies> {
  const byTier = new Map<Tier, { global: Placed[]; byNamespace: Map<string, Placed[]> }>();
  policies.forEach((policy, at) => {
    let entry = byTier.get(policy.tier);
    if (!entry) byTier.set(policy.tier, (entry = { global: [], byNamespace: new Map() }));
    const placed = { at, policy };
    if (policy.namespace === undefined) entry.global.push(placed);
    else {
      const list = entry.byNamespace.get(policy.namespace);
      if (list) list.push(placed);
      else entry.byNamespace.set(policy.namespace, [placed]);
    }
  });
  return byTier;
}

/**
 * The tier's policies that can select a pod of the namespace, in the cluster's order: those of
 * no namespace and those of that namespace (a namespaced policy's subject never leaves its
 * namespace) — each pod used to test every policy of the cluster, 10⁸ tests for 10,000 pods
 * and as many Calico or Cilium policies.
 */
function tierCandidates(index: ClusterIndex, tier: Tier, namespace: string): ClusterPolicy[] {
  let byTier = tierPolicies.get(index.cluster);
  if (!byTier) tierPolicies.set(index.cluster, (byTier = indexTiers(index.cluster.clusterPolicies)));
  const entry = byTier.get(tier);
  if (!entry) return [];
  const a = entry.global;
  const b = entry.byNamespace.get(namespace) ?? [];
  const merged: ClusterPolicy[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (y === undefined || (x !== undefined && x.at < y.at)) {
      merged.push((x as Placed).policy);
      i++;
    } else {
      merged.push(y.policy);
      j++;
    }
  }
  return merged;
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
      // Only what lies outside the cluster: no pod's address (of either kind), no node's. A
      // host-network endpoint is told by its address: one of the cluster's is a node's, and the
      // graphs stand for a range of outside addresses by one with an address of the range.
      if (other.kind === 'endpoint' && !other.endpoint.hostNetwork) return false;
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
  if (entry.type === 'named') return namedPortIs(destination, entry, protocol, port);
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
 * Whether the named port means this port on this protocol at the destination: what
 * `namedPortsOf` finds for the protocol (the first container port of that name on it), without
 * building the list — the matrix asks this for every pair.
 */
function namedPortIs(
  destination: Address,
  entry: Extract<ClusterPort, { type: 'named' }>,
  protocol: Protocol,
  port: number,
): boolean {
  if (destination.kind !== 'endpoint' || destination.endpoint.hostNetwork) return false;
  if (entry.protocol !== undefined && entry.protocol !== protocol) return false;
  for (const p of destination.endpoint.ports)
    if (p.name === entry.name && p.protocol === protocol) return p.port === port;
  return false;
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
