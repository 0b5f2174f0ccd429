/**
 * Network Config Analyzer's set queries between two policy sets, over one topology (the
 * namespaces, endpoints and nodes of both inputs; the first input's where both define one):
 * - equivalence: both allow exactly the same connections;
 * - containment: everything the first allows, the second allows too;
 * - interference: adding the second to the first lets more through to or from endpoints the
 *   first one's policies select (the second "interferes" with what the first decides for them).
 * Each is answered with witnesses — pairs and the ports that break it — computed by the diff
 * machinery, so the cost is what differs between the two policy sets, not the cluster squared.
 */
import { comparePolicies } from '../../model/precedence.ts';
import { subtractPorts } from '../../model/port-set.ts';
import type { Cluster, Endpoint, Namespace, NodeInfo, Semantics } from '../../model/types.ts';
import { groupEndpoints } from '../workload-view.ts';
import {
  isNoPorts,
  selectingClusterPolicies,
  tierPlan,
  selectingPolicies,
  type Address,
  type PortSet,
} from '../../semantics/index.ts';
import { SidedEvaluator, type Side } from '../sided.ts';
import { diffConnectivity } from './diff.ts';
import { endpointObject } from './objects.ts';
import type { ConnectionChange, DiffPeer } from './types.ts';

export type QueryName = 'equiv' | 'contains' | 'interferes';

export interface Witness {
  readonly from: DiffPeer;
  readonly to: DiffPeer;
  /** Allowed by the first input's policies. */
  readonly first: PortSet;
  /** Allowed by the second's (for interference: by both together). */
  readonly second: PortSet;
  /** The ports that break the property. */
  readonly ports: PortSet;
}

export interface QueryResult {
  readonly query: QueryName;
  /** The answer: equivalent, contained, or (for `interferes`) interfering. */
  readonly holds: boolean;
  /**
   * The pairs that make the answer what it is when it calls for action: for equiv and contains
   * the pairs that break it, for interferes the pairs the second input widens (sorted like the diff).
   */
  readonly witnesses: readonly Witness[];
}

interface QueryOptions {
  readonly semantics?: Semantics;
}

/** The two inputs' policies over the namespaces, endpoints and nodes of both. */
function overSharedTopology(first: Cluster, second: Cluster): [Cluster, Cluster] {
  const namespaces = new Map<string, Namespace>(second.namespaces);
  for (const [name, ns] of first.namespaces)
    if (!ns.implicit || !namespaces.has(name)) namespaces.set(name, ns);
  const endpoints = new Map<string, Endpoint>();
  for (const e of [...second.endpoints, ...first.endpoints]) endpoints.set(endpointObject(e), e);
  const nodes = new Map<string, NodeInfo>([...second.nodes, ...first.nodes]);
  const topology = {
    namespaces: new Map([...namespaces].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    endpoints: [...endpoints.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    nodes,
  };
  return [
    { ...topology, policies: first.policies, clusterPolicies: first.clusterPolicies },
    { ...topology, policies: second.policies, clusterPolicies: second.clusterPolicies },
  ];
}

export function runQuery(
  query: QueryName,
  first: Cluster,
  second: Cluster,
  options: QueryOptions = {},
): QueryResult {
  const [a, b] = overSharedTopology(first, second);
  if (query === 'interferes') return interferes(a, b, options);
  // Pod by pod: a workload's pods can differ, and the answers must hold for every one.
  const diff = diffConnectivity(a, b, { ...options, by: 'pod' });
  const witnesses: Witness[] = [];
  for (const c of diff.connections) {
    const ports = query === 'equiv' ? symmetric(c) : subtractPorts(c.before, c.after);
    if (!isNoPorts(ports))
      witnesses.push({ from: c.from, to: c.to, first: c.before, second: c.after, ports });
  }
  return { query, holds: witnesses.length === 0, witnesses };
}

/** Ports allowed by exactly one of the two. */
function symmetric(c: ConnectionChange): PortSet {
  const only = subtractPorts(c.before, c.after);
  const other = subtractPorts(c.after, c.before);
  return isNoPorts(only) ? other : isNoPorts(other) ? only : { ranges: unionRanges(only, other) };
}

function unionRanges(a: PortSet, b: PortSet): PortSet['ranges'] {
  // Disjoint by construction (one is before \ after, the other after \ before): concatenate and sort.
  const merge = (x: readonly (readonly [number, number])[], y: readonly (readonly [number, number])[]) =>
    [...x, ...y].sort((p, q) => p[0] - q[0]);
  return {
    TCP: merge(a.ranges.TCP, b.ranges.TCP),
    UDP: merge(a.ranges.UDP, b.ranges.UDP),
    SCTP: merge(a.ranges.SCTP, b.ranges.SCTP),
  };
}

/**
 * The second interferes with the first when, with both together, a side the first's policies
 * decide (the egress of a source or the ingress of a destination they select) allows more.
 */
function interferes(first: Cluster, second: Cluster, options: QueryOptions): QueryResult {
  const both: Cluster = {
    ...first,
    policies: [...first.policies, ...second.policies].sort((x, y) =>
      x.namespace < y.namespace
        ? -1
        : x.namespace > y.namespace
          ? 1
          : x.name < y.name
            ? -1
            : x.name > y.name
              ? 1
              : 0,
    ),
    clusterPolicies: [...first.clusterPolicies, ...second.clusterPolicies].sort(comparePolicies),
  };
  const semantics = options.semantics ?? 'v1';
  const diff = diffConnectivity(first, both, { ...options, by: 'pod' });
  const alone = new SidedEvaluator(first, semantics);
  const together = new SidedEvaluator(both, semantics);
  const groups = new Map(groupEndpoints(first.endpoints, 'pod').map((g) => [`${g.kind} ${g.id}`, g.members]));
  const membersOf = (peer: DiffPeer): Address[] => {
    if (peer.type === 'endpoint')
      return (groups.get(`${peer.kind} ${peer.id}`) ?? []).map((endpoint) => ({
        kind: 'endpoint',
        endpoint,
      }));
    // Every address of the merged ranges gets the same answer from the endpoint's side: take one.
    const range = peer.intervals[0];
    return range ? [{ kind: 'ip', ip: { family: range.family, value: range.lo } }] : [];
  };
  const decides = (address: Address, side: Side): boolean =>
    address.kind === 'endpoint' &&
    (selectingPolicies(alone.index, address.endpoint, side, semantics).length > 0 ||
      tierPlan(alone.index.cluster).some(
        (tier) => selectingClusterPolicies(alone.index, address.endpoint, side, tier.name).length > 0,
      ));
  const witnesses: Witness[] = [];
  for (const c of diff.connections) {
    const more = subtractPorts(c.after, c.before);
    if (isNoPorts(more)) continue;
    // The extra ports must come through a side the first input decides.
    const widened = (src: Address, dst: Address, side: Side): boolean =>
      decides(side === 'egress' ? src : dst, side) &&
      !isNoPorts(subtractPorts(together.sidePorts(src, dst, side), alone.sidePorts(src, dst, side)));
    const sources = membersOf(c.from);
    const destinations = membersOf(c.to);
    const interfering = sources.some((src) =>
      destinations.some((dst) => widened(src, dst, 'egress') || widened(src, dst, 'ingress')),
    );
    if (interfering)
      witnesses.push({
        from: c.from,
        to: c.to,
        first: c.before,
        second: c.after,
        ports: more,
      });
  }
  return { query: 'interferes', holds: witnesses.length > 0, witnesses };
}
