/**
 * Equivalence classes of endpoints: two endpoints that no policy can tell apart (same namespace,
 * same values for every label key any selector reads, same named ports, same answers to every
 * ipBlock, same host-network status and, where it matters, the same node) get the same verdict
 * for every connection. The matrix evaluates one representative pair per class pair, which keeps
 * large clusters fast without changing any answer.
 */
import { familyBits, type Cidr, type IpFamily } from '../net/ip.ts';
import type {
  Cluster,
  ClusterRule,
  Endpoint,
  IpBlockPeer,
  LabelSelector,
  PolicyRule,
} from '../model/types.ts';

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
  /** Selectors read besides the policies' (explain: those of policies dropped as invalid). */
  moreSelectors: readonly (LabelSelector | undefined)[] = [],
): EndpointClasses {
  if (!grouping) return { classOf: Int32Array.from(endpoints.keys()), representatives: endpoints };
  const labelKeys = new Set<string>();
  const ipBlocks = new Map<string, IpBlockPeer>();
  // Blocks without excepts by their address text alone: 10,000 policies name a few hundred
  // blocks, and a key string built for each rule's network was most of this pass.
  const networks = new Map<string, IpBlockPeer>();
  const addNetwork = (cidr: Cidr): void => {
    if (!networks.has(cidr.text)) networks.set(cidr.text, { type: 'ipBlock', cidr, except: [] });
  };
  const addSelector = (selector: LabelSelector | undefined): void => {
    for (const r of selector?.requirements ?? []) labelKeys.add(r.key);
  };
  for (const selector of moreSelectors) addSelector(selector);
  // Each list visited in place (a list spread from both directions was an array per policy).
  const addRules = (rules: readonly PolicyRule[]): void => {
    for (const rule of rules)
      for (const peer of rule.peers ?? []) {
        if (peer.type === 'selector') addSelector(peer.podSelector);
        else if (peer.except.length === 0) addNetwork(peer.cidr);
        else ipBlocks.set(`${peer.cidr.text}-${peer.except.map((c) => c.text).join(',')}`, peer);
      }
  };
  for (const policy of cluster.policies) {
    addSelector(policy.podSelector);
    addRules(policy.ingress);
    addRules(policy.egress);
  }
  // Cluster policies: subject and peer pod selectors, and networks as ipBlocks. Namespace
  // selectors need nothing: the namespace is part of the signature. Nodes peers match node
  // addresses, which only host-network endpoints have, and those are told apart by node below.
  // Outside blocks (Cilium's CIDRs) match no pod, and a host-network endpoint by its address: the
  // graphs stand for a range outside the cluster by one.
  const outsideBlocks = new Map<string, IpBlockPeer>();
  const anyHostNetwork = endpoints.some((e) => e.hostNetwork);
  const addClusterRules = (rules: readonly ClusterRule[]): void => {
    for (const rule of rules)
      for (const peer of rule.peers) {
        if (peer.type === 'pods') addSelector(peer.podSelector);
        else if (peer.type === 'networks') for (const cidr of peer.cidrs) addNetwork(cidr);
        else if (peer.type === 'outside' && anyHostNetwork)
          for (const cidr of peer.cidrs)
            if (!outsideBlocks.has(cidr.text))
              outsideBlocks.set(cidr.text, { type: 'ipBlock', cidr, except: [] });
      }
  };
  for (const policy of cluster.clusterPolicies) {
    addSelector(policy.subject.podSelector);
    for (const subject of policy.moreSubjects ?? []) addSelector(subject.podSelector);
    addClusterRules(policy.ingress);
    addClusterRules(policy.egress);
  }
  const sortedKeys = [...labelKeys].sort();
  // The node only matters for node-local traffic and nodes peers, i.e. when host-network endpoints exist.
  const nodeMatters = endpoints.some((e) => e.hostNetwork);

  // First everything but ipBlocks, by a signature string; then each ipBlock splits the classes
  // into the endpoints whose addresses it admits and the rest (partition refinement, through the
  // sorted addresses: no ipBlock is tested against every address).
  const classByKey = new Map<string, number>();
  const classOf = new Int32Array(endpoints.length);
  endpoints.forEach((endpoint, i) => {
    const key = signature(endpoint, sortedKeys, nodeMatters);
    let cls = classByKey.get(key);
    if (cls === undefined) classByKey.set(key, (cls = classByKey.size));
    classOf[i] = cls;
  });
  const addresses = new AddressIndex(endpoints);
  let next = classByKey.size;
  // In any order: the classes are the common refinement, numbered by first member below.
  for (const block of networks.values()) next = refine(classOf, addresses.admitted(block), next);
  for (const block of ipBlocks.values()) next = refine(classOf, addresses.admitted(block), next);
  if (outsideBlocks.size > 0) {
    const hostAddresses = new AddressIndex(endpoints.map((e) => (e.hostNetwork ? e : NO_ADDRESSES)));
    for (const block of outsideBlocks.values()) next = refine(classOf, hostAddresses.admitted(block), next);
  }
  // Classes numbered by first member, each represented by it.
  const renumbered = new Map<number, number>();
  const representatives: Endpoint[] = [];
  classOf.forEach((cls, i) => {
    let id = renumbered.get(cls);
    if (id === undefined) {
      renumbered.set(cls, (id = representatives.length));
      representatives.push(endpoints[i] as Endpoint);
    }
    classOf[i] = id;
  });
  return { classOf, representatives };
}

/**
 * Splits classes by a per-endpoint value (0 for endpoints not listed): endpoints of one class
 * with different values end up in different classes. New classes are numbered from `next`;
 * returns the next free number.
 */
function refine(classOf: Int32Array, values: ReadonlyMap<number, number>, next: number): number {
  const split = new Map<string, number>();
  for (const [endpoint, value] of values) {
    if (value === 0) continue;
    const key = `${classOf[endpoint] as number}:${value}`;
    let cls = split.get(key);
    if (cls === undefined) split.set(key, (cls = next++));
    classOf[endpoint] = cls;
  }
  return next;
}

/** Stands for an endpoint whose addresses a refinement leaves out. */
const NO_ADDRESSES: Pick<Endpoint, 'ips'> = { ips: [] };

/** Endpoint addresses sorted per family, to find those an ipBlock admits by binary search. */
class AddressIndex {
  /** Per family: (address, endpoint, slot of the address among the endpoint's addresses). */
  private readonly sorted: Record<IpFamily, { value: bigint; endpoint: number; slot: number }[]> = {
    4: [],
    6: [],
  };

  constructor(endpoints: readonly Pick<Endpoint, 'ips'>[]) {
    endpoints.forEach((endpoint, i) =>
      endpoint.ips.forEach((ip, slot) => this.sorted[ip.family].push({ value: ip.value, endpoint: i, slot })),
    );
    for (const family of [4, 6] as const)
      this.sorted[family].sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  }

  /**
   * Per endpoint, a bit per address slot the block admits (in its CIDR, in none of its
   * excepts) — or, when fewer, the same for the addresses it does not admit: either splits the
   * classes alike (endpoints of one class have the same address families).
   */
  admitted(block: IpBlockPeer): Map<number, number> {
    const family = block.cidr.family;
    const sorted = this.sorted[family];
    const range = (cidr: Cidr): [number, number] => {
      const last = cidr.base + (1n << BigInt(familyBits(family) - cidr.prefix)) - 1n;
      return [this.lowerBound(sorted, cidr.base), this.lowerBound(sorted, last + 1n)];
    };
    const [low, high] = range(block.cidr);
    // Except ranges inside the CIDR, merged (excepts may overlap).
    const holes = block.except
      .filter((e) => e.family === family)
      .map(range)
      .map(([a, b]): [number, number] => [Math.max(a, low), Math.min(b, high)])
      .filter(([a, b]) => a < b)
      .sort((x, y) => x[0] - y[0]);
    const merged: [number, number][] = [];
    for (const hole of holes) {
      const last = merged[merged.length - 1];
      if (last && hole[0] <= last[1]) last[1] = Math.max(last[1], hole[1]);
      else merged.push([hole[0], hole[1]]);
    }
    const inside = high - low - merged.reduce((n, [a, b]) => n + b - a, 0);
    const values = new Map<number, number>();
    const mark = (from: number, to: number): void => {
      for (let i = from; i < to; i++) {
        const entry = sorted[i] as { endpoint: number; slot: number };
        values.set(entry.endpoint, (values.get(entry.endpoint) ?? 0) | (1 << entry.slot));
      }
    };
    if (inside <= sorted.length - inside) {
      let at = low;
      for (const [a, b] of merged) {
        mark(at, a);
        at = b;
      }
      mark(at, high);
    } else {
      mark(0, low);
      for (const [a, b] of merged) mark(a, b);
      mark(high, sorted.length);
    }
    return values;
  }

  private lowerBound(sorted: readonly { value: bigint }[], value: bigint): number {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((sorted[mid] as { value: bigint }).value < value) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

function signature(endpoint: Endpoint, labelKeys: readonly string[], nodeMatters: boolean): string {
  const labels = labelKeys.map((k) => (k in endpoint.labels ? `=${endpoint.labels[k]}` : '-')).join('\u0001');
  const ports = endpoint.ports
    .filter((p) => p.name !== undefined)
    .map((p) => `${p.name}/${p.protocol}/${p.port}`)
    .sort()
    .join(',');
  const families = [...new Set(endpoint.ips.map((ip) => ip.family))].sort().join('');
  return [
    endpoint.namespace,
    endpoint.hostNetwork ? 'H' : 'P',
    nodeMatters ? (endpoint.node ?? '') : '',
    labels,
    ports,
    families,
  ].join('\u0000');
}
