/**
 * Which namespaces and endpoints a selector, a peer or an address range picks, without scanning
 * the cluster per question. Lint asks this for every policy, peer and named port: at 10,000
 * endpoints and 7,500 policies a scan per question would be tens of millions of label matches.
 * Namespaces, and each namespace's endpoints, are indexed by distinct label set with posting
 * lists per `key=value` and per key; endpoint addresses are sorted per family for range queries.
 */
import { selectorMatches, type LabelSelector } from '../model/selector.ts';
import type { Cluster, Endpoint, Labels, Namespace, SelectorPeer } from '../model/types.ts';
import type { IpAddress, IpFamily } from '../net/ip.ts';
import type { IpInterval } from '../net/intervals.ts';

/** Items grouped by distinct label set, with postings so a selector finds its candidates. */
class LabelSetIndex<T> {
  private readonly sets: { labels: Labels; items: T[] }[] = [];
  private readonly byValue = new Map<string, number[]>();
  private readonly byKey = new Map<string, number[]>();

  constructor(items: readonly T[], labelsOf: (item: T) => Labels) {
    const setByKey = new Map<string, number>();
    for (const item of items) {
      const labels = labelsOf(item);
      const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      let id = setByKey.get(key);
      if (id === undefined) {
        id = this.sets.length;
        setByKey.set(key, id);
        this.sets.push({ labels, items: [] });
        for (const [k, v] of Object.entries(labels)) {
          push(this.byValue, `${k}=${v}`, id);
          push(this.byKey, k, id);
        }
      }
      this.sets[id]?.items.push(item);
    }
  }

  /** Items whose labels the selector matches. */
  matching(selector: LabelSelector): T[] {
    const result: T[] = [];
    for (const id of this.candidates(selector)) {
      const set = this.sets[id];
      // One push per item: spreading a set of 100,000+ pods into push() overflows the stack.
      if (set && selectorMatches(selector, set.labels)) for (const item of set.items) result.push(item);
    }
    return result;
  }

  /** The smallest posting list an In or Exists requirement allows; every set otherwise. */
  private candidates(selector: LabelSelector): Iterable<number> {
    let best: number[] | undefined;
    for (const r of selector.requirements) {
      let list: number[] | undefined;
      if (r.operator === 'Exists') list = this.byKey.get(r.key) ?? [];
      else if (r.operator === 'In')
        list =
          r.values.length === 1
            ? (this.byValue.get(`${r.key}=${r.values[0]}`) ?? [])
            : r.values.flatMap((v) => this.byValue.get(`${r.key}=${v}`) ?? []);
      if (list && (!best || list.length < best.length)) best = list;
    }
    return best ?? this.sets.keys();
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Up to this many endpoints, a namespace is scanned rather than indexed. */
const SMALL_NAMESPACE = 16;

/** An endpoint's address of one family, sorted for range queries. */
interface AddressEntry {
  readonly value: bigint;
  readonly endpoint: Endpoint;
}

const shared = new WeakMap<Cluster, EndpointIndex>();

/**
 * The cluster's index, made once and shared: a cluster does not change once built, and a diff
 * asks it for its port bounds and for what each change reaches (two indexes of 100,000 pods
 * each, their addresses sorted twice, were a second of a diff).
 */
export function endpointIndexOf(cluster: Cluster): EndpointIndex {
  let index = shared.get(cluster);
  if (!index) shared.set(cluster, (index = new EndpointIndex(cluster)));
  return index;
}

export class EndpointIndex {
  private readonly namespaceIndex: LabelSetIndex<Namespace>;
  private readonly endpointsByNamespace = new Map<string, Endpoint[]>();
  private readonly podIndexes = new Map<string, LabelSetIndex<Endpoint>>();
  private readonly namespaceMemo = new Map<string, readonly Namespace[]>();
  private readonly peerMemo = new Map<string, readonly Endpoint[]>();
  private readonly selectorPeerMemo = new Map<string, readonly Endpoint[]>();
  /** Every endpoint address, host-networked endpoints' (their node's) included. */
  private readonly addresses = new Map<IpFamily, AddressEntry[]>();
  /** Addresses of endpoints that are pods of the pod network (not host-networked). */
  private readonly podAddresses = new Map<IpFamily, AddressEntry[]>();

  constructor(readonly cluster: Cluster) {
    this.namespaceIndex = new LabelSetIndex([...cluster.namespaces.values()], (ns) => ns.labels);
    for (const endpoint of cluster.endpoints) {
      push(this.endpointsByNamespace, endpoint.namespace, endpoint);
      for (const ip of endpoint.ips) {
        push(this.addresses, ip.family, { value: ip.value, endpoint });
        if (!endpoint.hostNetwork) push(this.podAddresses, ip.family, { value: ip.value, endpoint });
      }
    }
    for (const list of [...this.addresses.values(), ...this.podAddresses.values()])
      list.sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  }

  /** Endpoints of a namespace, host-networked ones included. */
  endpointsIn(namespace: string): readonly Endpoint[] {
    return this.endpointsByNamespace.get(namespace) ?? [];
  }

  namespacesMatching(selector: LabelSelector): readonly Namespace[] {
    let found = this.namespaceMemo.get(selector.key);
    if (!found) this.namespaceMemo.set(selector.key, (found = this.namespaceIndex.matching(selector)));
    return found;
  }

  /**
   * Endpoints of the namespace matching the pod selector (every one when absent). Host-networked
   * endpoints are left out: no pod selector (of a policy or a peer) ever picks them.
   */
  podsMatching(namespace: string, podSelector: LabelSelector | undefined): readonly Endpoint[] {
    const key = `${namespace}\u0000${podSelector?.key ?? '*'}`;
    let found = this.peerMemo.get(key);
    if (found) return found;
    const all = this.endpointsIn(namespace);
    if (podSelector && podSelector.requirements.length > 0 && all.length <= SMALL_NAMESPACE) {
      // A few endpoints are matched faster than an index is built.
      found = all.filter((e) => !e.hostNetwork && selectorMatches(podSelector, e.labels));
    } else if (podSelector && podSelector.requirements.length > 0) {
      let index = this.podIndexes.get(namespace);
      if (!index)
        this.podIndexes.set(
          namespace,
          (index = new LabelSetIndex(this.endpointsIn(namespace), (e) => e.labels)),
        );
      found = index.matching(podSelector).filter((e) => !e.hostNetwork);
    } else {
      found = this.endpointsIn(namespace).filter((e) => !e.hostNetwork);
    }
    this.peerMemo.set(key, found);
    return found;
  }

  /** Endpoints a NetworkPolicy selector peer matches (the policy's own namespace when it has no namespaceSelector). */
  selectorPeerEndpoints(peer: SelectorPeer, policyNamespace: string): readonly Endpoint[] {
    const key = `${peer.namespaceSelector ? `=${peer.namespaceSelector.key}` : policyNamespace}\u0001${peer.podSelector?.key ?? '*'}`;
    let found = this.selectorPeerMemo.get(key);
    if (!found) {
      found = peer.namespaceSelector
        ? this.namespacesMatching(peer.namespaceSelector).flatMap((ns) =>
            this.podsMatching(ns.name, peer.podSelector),
          )
        : this.podsMatching(policyNamespace, peer.podSelector);
      this.selectorPeerMemo.set(key, found);
    }
    return found;
  }

  /**
   * Endpoints with an address inside the interval, each with that address (at most `limit`;
   * with `podsOnly`, host-networked endpoints are left out).
   */
  endpointsInInterval(
    interval: IpInterval,
    options: { podsOnly?: boolean; limit?: number } = {},
  ): { endpoint: Endpoint; ip: IpAddress }[] {
    const list = (options.podsOnly ? this.podAddresses : this.addresses).get(interval.family) ?? [];
    const limit = options.limit ?? Infinity;
    const result: { endpoint: Endpoint; ip: IpAddress }[] = [];
    for (let i = lowerBound(list, interval.lo); i < list.length && result.length < limit; i++) {
      const entry = list[i] as AddressEntry;
      if (entry.value > interval.hi) break;
      result.push({ endpoint: entry.endpoint, ip: { family: interval.family, value: entry.value } });
    }
    return result;
  }

  /** Endpoints with an address inside any of the intervals (an endpoint may repeat, once per address). */
  endpointsInIntervals(intervals: readonly IpInterval[]): Endpoint[] {
    return intervals.flatMap((i) => this.endpointsInInterval(i).map((e) => e.endpoint));
  }

  /** How many endpoint addresses (with `podsOnly`, pod network addresses) lie inside the interval. */
  addressCount(interval: IpInterval, podsOnly = false): number {
    const list = (podsOnly ? this.podAddresses : this.addresses).get(interval.family) ?? [];
    return lowerBound(list, interval.hi + 1n) - lowerBound(list, interval.lo);
  }

  /** The lowest address of the interval that no endpoint has, if any. */
  freeAddress(interval: IpInterval): IpAddress | undefined {
    const list = this.addresses.get(interval.family) ?? [];
    let candidate = interval.lo;
    for (let i = lowerBound(list, interval.lo); i < list.length && candidate <= interval.hi; i++) {
      const value = (list[i] as AddressEntry).value;
      if (value > candidate) break;
      if (value === candidate) candidate++;
    }
    return candidate <= interval.hi ? { family: interval.family, value: candidate } : undefined;
  }
}

function lowerBound(list: readonly AddressEntry[], value: bigint): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as AddressEntry).value < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
