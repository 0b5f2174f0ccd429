/**
 * The matching rules of the NetworkPolicy API, one function each, written from the API
 * documentation: which policies select a pod, whether a peer matches an address, whether a port
 * entry matches a destination port (named ports resolve against the destination pod).
 */
import { cidrContains, type Cidr, type IpAddress, type IpFamily } from '../net/ip.ts';
import {
  cidrInterval,
  normalizeIntervals,
  sortedIntervalsContain,
  type IpInterval,
} from '../net/intervals.ts';
import { selectorMatches } from '../model/selector.ts';
import type {
  Cluster,
  Endpoint,
  NetworkPolicy,
  Peer,
  PolicyPort,
  Protocol,
  Semantics,
} from '../model/types.ts';
import type { PortSet } from '../model/port-set.ts';
import type { Address } from './types.ts';

/** Policies grouped by namespace and namespace labels, built once per cluster. */
export interface ClusterIndex {
  readonly cluster: Cluster;
  readonly policiesByNamespace: ReadonlyMap<string, readonly NetworkPolicy[]>;
  /**
   * What selects each endpoint, remembered per endpoint (`selectingPolicies`,
   * `selectingClusterPolicies`): the cluster does not change once indexed, and a matrix asks
   * the same question of one endpoint for every other endpoint.
   */
  readonly selections: WeakMap<Endpoint, Map<string, readonly unknown[]>>;
  /** A rule's port list as a port set, for lists without named ports (the same for every destination). */
  readonly numericPorts: WeakMap<readonly PolicyPort[], PortSet>;
  /** Every pod's and node's address (`family:value`), made when first asked (`isClusterAddress`). */
  clusterAddresses?: ReadonlySet<string>;
  /**
   * What each endpoint's sides visit before any rule, made when first asked: side-plan.ts's
   * `SidePlans` (typed there: that module builds on this one).
   */
  readonly sidePlans: WeakMap<Endpoint, object>;
}

export function indexCluster(cluster: Cluster): ClusterIndex {
  const policiesByNamespace = new Map<string, NetworkPolicy[]>();
  for (const policy of cluster.policies) {
    const list = policiesByNamespace.get(policy.namespace) ?? [];
    list.push(policy);
    policiesByNamespace.set(policy.namespace, list);
  }
  return {
    cluster,
    policiesByNamespace,
    selections: new WeakMap(),
    numericPorts: new WeakMap(),
    sidePlans: new WeakMap(),
  };
}

/** `compute()` once per endpoint and key, from the index's memo. */
export function memoizedSelection<T>(
  index: ClusterIndex,
  endpoint: Endpoint,
  key: string,
  compute: () => readonly T[],
): readonly T[] {
  let byKey = index.selections.get(endpoint);
  if (!byKey) index.selections.set(endpoint, (byKey = new Map<string, readonly unknown[]>()));
  let found = byKey.get(key) as readonly T[] | undefined;
  if (!found) byKey.set(key, (found = compute()));
  return found;
}

/**
 * The memo key of each direction and semantics, written once: a key made afresh per question was
 * hashed afresh per question (a diff asks every endpoint's sides several times).
 */
const SELECTION_KEYS: Readonly<Record<'ingress' | 'egress', Readonly<Record<Semantics, string>>>> = {
  ingress: { v1: 'ingress|v1', 'v1beta1-proposal': 'ingress|v1beta1-proposal' },
  egress: { v1: 'egress|v1', 'v1beta1-proposal': 'egress|v1beta1-proposal' },
};

/** Policies in the endpoint's namespace whose podSelector selects it, for one direction. */
export function selectingPolicies(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  semantics: Semantics,
): readonly NetworkPolicy[] {
  if (endpoint.hostNetwork) return [];
  return memoizedSelection(index, endpoint, SELECTION_KEYS[direction][semantics], () =>
    policiesSelecting(index, endpoint, direction, semantics),
  );
}

function policiesSelecting(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  semantics: Semantics,
): NetworkPolicy[] {
  return (index.policiesByNamespace.get(endpoint.namespace) ?? []).filter((policy) => {
    // The v1beta1 proposal has ingress policies only, whatever the object says.
    const affects =
      semantics === 'v1beta1-proposal'
        ? direction === 'ingress'
        : direction === 'ingress'
          ? policy.affectsIngress
          : policy.affectsEgress;
    return affects && selectorMatches(policy.podSelector, endpoint.labels);
  });
}

/** The address an endpoint or IP uses for a connection of the given family. */
export function addressIp(address: Address, family: IpFamily | undefined): IpAddress | undefined {
  if (address.kind === 'ip')
    return family === undefined || address.ip.family === family ? address.ip : undefined;
  if (family === undefined) return undefined;
  return address.endpoint.ips.find((ip) => ip.family === family);
}

/** Up to this many excepts are scanned; more are searched in their sorted intervals. */
const EXCEPTS_SCANNED = 16;
const exceptIntervals = new WeakMap<readonly Cidr[], IpInterval[]>();

/**
 * Whether an ipBlock's `except` list holds `ip`. A list of thousands (hostile input has a
 * million in a file) is searched in its sorted intervals, made once per list: every range of
 * addresses an analysis asks about would otherwise cost a scan of the whole list.
 */
function excepted(except: readonly Cidr[], ip: IpAddress): boolean {
  if (except.length <= EXCEPTS_SCANNED) return except.some((cidr) => cidrContains(cidr, ip));
  let sorted = exceptIntervals.get(except);
  if (!sorted) {
    sorted = normalizeIntervals(except.map(cidrInterval));
    exceptIntervals.set(except, sorted);
  }
  return sortedIntervalsContain(sorted, ip);
}

export function peerMatches(
  index: ClusterIndex,
  peer: Peer,
  policyNamespace: string,
  other: Address,
  family: IpFamily | undefined,
): boolean {
  if (peer.type === 'ipBlock') {
    // Pod IPs match ipBlocks too, as the upstream e2e tests expect.
    const ip = addressIp(other, family);
    if (!ip || !cidrContains(peer.cidr, ip)) return false;
    return !excepted(peer.except, ip);
  }
  if (other.kind !== 'endpoint' || other.endpoint.hostNetwork) return false;
  const endpoint = other.endpoint;
  if (peer.namespaceSelector) {
    const namespace = index.cluster.namespaces.get(endpoint.namespace);
    if (!namespace || !selectorMatches(peer.namespaceSelector, namespace.labels)) return false;
  } else if (endpoint.namespace !== policyNamespace) {
    return false;
  }
  return !peer.podSelector || selectorMatches(peer.podSelector, endpoint.labels);
}

/** A named port resolves against the destination's container ports, by name and protocol. */
export function resolveNamedPort(destination: Address, name: string, protocol: Protocol): number | undefined {
  return destination.kind === 'endpoint' ? namedPortOf(destination.endpoint, name, protocol) : undefined;
}

/** The number an endpoint's container port of this name and protocol has; undefined when none. */
export function namedPortOf(endpoint: Endpoint, name: string, protocol: Protocol): number | undefined {
  return endpoint.ports.find((p) => p.name === name && p.protocol === protocol)?.port;
}

export function portMatches(
  port: PolicyPort,
  destination: Address,
  protocol: Protocol,
  portNumber: number,
): boolean {
  if (port.protocol !== protocol) return false;
  if (port.port === undefined) return true;
  if (typeof port.port === 'string') return resolveNamedPort(destination, port.port, protocol) === portNumber;
  if (port.endPort !== undefined) return portNumber >= port.port && portNumber <= port.endPort;
  return portNumber === port.port;
}

/** v1: an empty or absent list matches everything. The v1beta1 proposal: only absent does. */
export function listMatchesAll(list: readonly unknown[] | undefined, semantics: Semantics): boolean {
  return list === undefined || (list.length === 0 && semantics === 'v1');
}

/**
 * Whether an address belongs to the cluster: a pod's (host-networked ones use their node's) or a
 * node's. What is not is "outside" (Cilium's `world`).
 */
export function isClusterAddress(index: ClusterIndex, ip: IpAddress): boolean {
  if (!index.clusterAddresses) {
    const all = new Set<string>();
    for (const endpoint of index.cluster.endpoints)
      for (const a of endpoint.ips) all.add(`${a.family}:${a.value}`);
    for (const node of index.cluster.nodes.values())
      for (const a of node.addresses) all.add(`${a.family}:${a.value}`);
    index.clusterAddresses = all;
  }
  return index.clusterAddresses.has(`${ip.family}:${ip.value}`);
}

/** True when the address is the given endpoint's own node (its address, or a hostNetwork pod on it). */
export function isOwnNode(index: ClusterIndex, endpoint: Endpoint, other: Address): boolean {
  if (!endpoint.node) return false;
  if (other.kind === 'endpoint') return other.endpoint.hostNetwork && other.endpoint.node === endpoint.node;
  if (other.node !== undefined) return other.node === endpoint.node;
  const node = index.cluster.nodes.get(endpoint.node);
  return node?.addresses.some((a) => a.family === other.ip.family && a.value === other.ip.value) ?? false;
}
