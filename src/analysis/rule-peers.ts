/**
 * Which endpoints a rule's peers match, for `explain`: found through the endpoint index (a
 * selector by its label postings, an ipBlock by the sorted addresses), once per rule — not by
 * testing every endpoint for every rule of every endpoint explained, which made explaining
 * shape (a) grow with the square of the cluster (20 CPU-s at 10,000 pods, hours at 100,000). A
 * rule's answer does not depend on who is explained (a cluster-policy peer relative to the
 * subject's namespace is asked per namespace), so every endpoint a policy selects shares it.
 *
 * The answer is a list that knows its length and its first few members without being built:
 * the text names six and counts the rest, and an ipBlock over the whole pod network matches
 * every pod — building that list for each of 25,000 such rules is the square again. Endpoints
 * are listed in the cluster's order, as a scan would list them.
 */
import { cidrContains } from '../net/ip.ts';
import { cidrInterval, ipBlockIntervals, sortedIntervalsContain, type IpInterval } from '../net/intervals.ts';
import type { ClusterPeer, ClusterRule } from '../model/cluster-policy.ts';
import type { ClusterPolicy, Endpoint, NetworkPolicy, Peer, PolicyRule } from '../model/types.ts';
import { clusterPeerMatches, type ClusterIndex } from '../semantics/index.ts';
import { EndpointIndex } from './endpoint-index.ts';

/** The endpoint's first address of the family of its first address. */
function firstOfFamily(endpoint: Endpoint): Endpoint['ips'][number] | undefined {
  const family = endpoint.ips[0]?.family;
  return endpoint.ips.find((ip) => ip.family === family);
}

/** The endpoints a rule matches, by id, in the cluster's order: counted and named as far as asked. */
export interface EndpointList {
  readonly length: number;
  /** The first `n` ids. */
  first(n: number): readonly string[];
  /** Every id (what `-o json` writes). */
  toJSON(): readonly string[];
  /** Whether some endpoint of the list passes the test. */
  some(test: (endpoint: Endpoint) => boolean): boolean;
}

/** A list already built. */
class ListedEndpoints implements EndpointList {
  private ids?: readonly string[];
  constructor(private readonly endpoints: readonly Endpoint[]) {}
  get length(): number {
    return this.endpoints.length;
  }
  first(n: number): readonly string[] {
    return this.endpoints.slice(0, n).map((e) => e.id);
  }
  toJSON(): readonly string[] {
    return (this.ids ??= this.endpoints.map((e) => e.id));
  }
  some(test: (endpoint: Endpoint) => boolean): boolean {
    return this.endpoints.some(test);
  }
}

/** Fewer matches than this are listed from the address index and sorted; more are found by walking the cluster's order. */
const LISTED_MATCHES = 2000;

/** The endpoints with an address in a set of ranges (one ipBlock): counted from the sorted addresses. */
class EndpointsInRanges implements EndpointList {
  readonly length: number;
  constructor(
    private readonly peers: RulePeers,
    private readonly ranges: readonly IpInterval[],
  ) {
    this.length = peers.countInRanges(ranges);
  }
  first(n: number): readonly string[] {
    if (this.length <= LISTED_MATCHES) return this.all().slice(0, n);
    // Many matches: the first few in the cluster's order are near its start.
    const out: string[] = [];
    for (const e of this.peers.cluster.endpoints) {
      if (out.length >= n) break;
      if (e.ips.some((ip) => sortedIntervalsContain(this.ranges, ip))) out.push(e.id);
    }
    return out;
  }
  toJSON(): readonly string[] {
    return this.all();
  }
  some(test: (endpoint: Endpoint) => boolean): boolean {
    return this.ranges.some((r) => this.peers.inRange(r).some(test));
  }
  private all(): string[] {
    return this.peers.inOrder(this.ranges.flatMap((r) => this.peers.inRange(r))).map((e) => e.id);
  }
}

export class RulePeers {
  private readonly endpoints: EndpointIndex;
  private readonly order = new Map<Endpoint, number>();
  private readonly memo = new Map<object, Map<string, EndpointList>>();
  private readonly lists = new Map<readonly Endpoint[], EndpointList>();
  /** Some endpoint has two addresses of one family: counting addresses would count it twice. */
  private readonly severalPerFamily: boolean;

  constructor(private readonly index: ClusterIndex) {
    this.endpoints = new EndpointIndex(index.cluster);
    index.cluster.endpoints.forEach((e, i) => this.order.set(e, i));
    this.severalPerFamily = index.cluster.endpoints.some(
      (e) => new Set(e.ips.map((ip) => ip.family)).size < e.ips.length,
    );
  }

  get cluster(): ClusterIndex['cluster'] {
    return this.index.cluster;
  }

  /** The endpoints a NetworkPolicy rule's peers match (no peers: every endpoint). */
  ofRule(policy: NetworkPolicy, direction: 'ingress' | 'egress', rule: PolicyRule): EndpointList {
    return this.remember(rule, `${direction}`, () => {
      const peers = rule.peers;
      if (peers === undefined || peers.length === 0) return this.listOf(this.index.cluster.endpoints);
      const only = peers.length === 1 ? peers[0] : undefined;
      if (only?.type === 'ipBlock' && !this.severalPerFamily)
        return new EndpointsInRanges(this, ipBlockIntervals(only.cidr, only.except));
      if (only) return this.listOf(this.ofPeer(only, policy.namespace));
      return this.listOf(this.inOrder(peers.flatMap((peer) => this.ofPeer(peer, policy.namespace))));
    });
  }

  /** The endpoints a cluster-policy rule's peers match for a subject (relative peers per subject namespace or node). */
  ofClusterRule(
    policy: ClusterPolicy,
    rule: ClusterRule,
    direction: 'ingress' | 'egress',
    subject: Endpoint,
  ): EndpointList {
    const relative = rule.peers.some(
      (p) =>
        p.type === 'pods' &&
        (p.namespaces.sameLabels !== undefined || p.namespaces.notSameLabels !== undefined),
    );
    // Cilium's host and remote-node entities are relative to the subject's node.
    const byNode = rule.peers.some((p) => p.type === 'nodes' && p.only !== undefined);
    const key = `${direction}|${relative ? subject.namespace : ''}|${byNode ? (subject.node ?? '') : ''}|${policy.name}`;
    return this.remember(rule, key, () =>
      this.listOf(this.inOrder(rule.peers.flatMap((peer) => this.ofClusterPeer(peer, subject)))),
    );
  }

  /** Endpoints with an address in the range (an endpoint once per such address). */
  inRange(range: IpInterval): Endpoint[] {
    return this.endpoints.endpointsInInterval(range).map(({ endpoint }) => endpoint);
  }

  /** Endpoints with an address in the ranges (disjoint ranges; at most one address per family each). */
  countInRanges(ranges: readonly IpInterval[]): number {
    let count = 0;
    for (const range of ranges) count += this.endpoints.addressCount(range);
    return count;
  }

  /** One list object per list of endpoints, so its ids are built once however many rules share it. */
  private listOf(endpoints: readonly Endpoint[]): EndpointList {
    let list = this.lists.get(endpoints);
    if (!list) this.lists.set(endpoints, (list = new ListedEndpoints(endpoints)));
    return list;
  }

  private ofPeer(peer: Peer, namespace: string): readonly Endpoint[] {
    if (peer.type !== 'ipBlock') return this.endpoints.selectorPeerEndpoints(peer, namespace);
    return this.endpoints
      .endpointsInInterval(cidrInterval(peer.cidr))
      .filter(({ ip }) => !peer.except.some((x) => cidrContains(x, ip)))
      .map(({ endpoint }) => endpoint);
  }

  private ofClusterPeer(peer: ClusterPeer, subject: Endpoint): readonly Endpoint[] {
    switch (peer.type) {
      case 'pods':
        if (peer.namespaces.selector && !peer.namespaces.sameLabels && !peer.namespaces.notSameLabels)
          return this.endpoints
            .namespacesMatching(peer.namespaces.selector)
            .flatMap((ns) => this.endpoints.podsMatching(ns.name, peer.podSelector));
        break;
      case 'networks':
        // As the evaluator asks it here: each endpoint by its first address's family.
        return peer.cidrs.flatMap((cidr) =>
          this.endpoints
            .endpointsInInterval(cidrInterval(cidr))
            .filter(({ endpoint, ip }) => firstOfFamily(endpoint)?.value === ip.value)
            .map(({ endpoint }) => endpoint),
        );
      case 'domainNames':
        return [];
      default:
        break;
    }
    // Relative namespaces and nodes peers: asked endpoint by endpoint, as the evaluator asks.
    return this.index.cluster.endpoints.filter((e) =>
      clusterPeerMatches(this.index, peer, subject, { kind: 'endpoint', endpoint: e }, e.ips[0]?.family),
    );
  }

  /** Distinct endpoints in the cluster's order. */
  inOrder(found: readonly Endpoint[]): readonly Endpoint[] {
    const unique = [...new Set(found)];
    return unique.sort((a, b) => (this.order.get(a) as number) - (this.order.get(b) as number));
  }

  private remember(owner: object, key: string, compute: () => EndpointList): EndpointList {
    let byKey = this.memo.get(owner);
    if (!byKey) this.memo.set(owner, (byKey = new Map<string, EndpointList>()));
    let found = byKey.get(key);
    if (!found) byKey.set(key, (found = compute()));
    return found;
  }
}
