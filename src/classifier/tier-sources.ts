/**
 * What tier tables are built from, read from a cluster snapshot: which cluster policies select a
 * pod (per tier and direction), and the addresses a cluster-policy peer stands for — pods by
 * namespace and pod selector (namespaces indexed, selectors memoized), node addresses by node
 * labels, networks as they are. Relative v0.1.1 peers (sameLabels, notSameLabels) resolve against
 * the subject's namespace.
 */
import type { IpAddress } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import { clusterPolicyLabel, namedPortTargets, namespaceMatches } from '../model/cluster-policy.ts';
import type { Cluster, ClusterPeer, ClusterPolicy, Endpoint, LabelSelector, Tier } from '../model/types.ts';
import type { GroupResolver } from './direction-table.ts';
import { AddressGroupIndex } from './address-groups.ts';

const NONE: readonly ClusterPolicy[] = [];

export class TierSources implements GroupResolver {
  private readonly podsByNamespace = new Map<string, Endpoint[]>();
  /** Peer groups (pods and nodes peers) shared by every tier table: id by peer key, members by address. */
  private readonly groupIds = new Map<string, number>();
  private readonly groupLabels: string[] = [];
  private readonly addressGroups = new AddressGroupIndex();
  private readonly peerMemo = new Map<string, readonly Endpoint[]>();
  private readonly selectionMemo = new Map<string, readonly ClusterPolicy[]>();
  private readonly namespaceCandidates = new Map<string, readonly ClusterPolicy[]>();
  private readonly numbersMemo = new Map<string, readonly string[]>();

  private readonly selectorMatchesMemo = new Map<string, ReadonlySet<string>>();
  /** Precedence position of each policy, and policies by tier, direction and subject selector key. */
  private readonly order = new Map<ClusterPolicy, number>();
  private readonly policiesBySelector = new Map<string, Map<string, ClusterPolicy[]>>();
  /** Subject namespace selectors by key: many policies share one. */
  private readonly subjectSelectors = new Map<string, LabelSelector>();

  constructor(readonly cluster: Cluster) {
    cluster.clusterPolicies.forEach((p, i) => {
      const key = p.subject.namespaceSelector.key;
      this.subjectSelectors.set(key, p.subject.namespaceSelector);
      this.order.set(p, i);
      for (const direction of ['ingress', 'egress'] as const) {
        if (p[direction].length === 0) continue;
        const slot = `${p.tier}|${direction}`;
        const bySelector = this.policiesBySelector.get(slot) ?? new Map<string, ClusterPolicy[]>();
        bySelector.set(key, [...(bySelector.get(key) ?? []), p]);
        this.policiesBySelector.set(slot, bySelector);
      }
    });
    for (const endpoint of cluster.endpoints) {
      if (endpoint.hostNetwork || endpoint.ips.length === 0) continue;
      const list = this.podsByNamespace.get(endpoint.namespace) ?? [];
      list.push(endpoint);
      this.podsByNamespace.set(endpoint.namespace, list);
    }
  }

  get hasPolicies(): boolean {
    return this.cluster.clusterPolicies.length > 0;
  }

  /**
   * Policies of a tier selecting the pod with rules in the direction, in precedence order. The
   * namespace part of subjects is evaluated once per namespace; pod selectors only for the
   * policies that have one. Pods that end with the same policies get the same array.
   */
  selecting(pod: Endpoint, tier: Tier, direction: 'ingress' | 'egress'): readonly ClusterPolicy[] {
    if (pod.hostNetwork) return NONE;
    const nsKey = `${tier}|${direction}|${pod.namespace}`;
    let candidates = this.namespaceCandidates.get(nsKey);
    if (!candidates) {
      // Policies of the selectors the namespace matches, back in precedence order.
      const bySelector = this.policiesBySelector.get(`${tier}|${direction}`);
      const found: ClusterPolicy[] = [];
      for (const key of this.namespaceSelectorsMatching(pod.namespace))
        found.push(...(bySelector?.get(key) ?? []));
      candidates = found.sort((a, b) => (this.order.get(a) as number) - (this.order.get(b) as number));
      this.namespaceCandidates.set(nsKey, candidates);
    }
    if (!candidates.some((p) => p.subject.podSelector)) return candidates;
    const chosen = candidates.filter(
      (p) => !p.subject.podSelector || selectorMatches(p.subject.podSelector, pod.labels),
    );
    const key = `${nsKey}|${chosen.map(clusterPolicyLabel).join(',')}`;
    const shared = this.selectionMemo.get(key);
    if (shared) return shared;
    this.selectionMemo.set(key, chosen);
    return chosen;
  }

  /** The distinct subject namespace selectors (by key) a namespace matches, each evaluated once. */
  private namespaceSelectorsMatching(namespace: string): ReadonlySet<string> {
    const known = this.selectorMatchesMemo.get(namespace);
    if (known) return known;
    const matches = new Set<string>();
    const labels = this.cluster.namespaces.get(namespace)?.labels;
    if (labels)
      for (const [key, selector] of this.subjectSelectors)
        if (selectorMatches(selector, labels)) matches.add(key);
    this.selectorMatchesMemo.set(namespace, matches);
    return matches;
  }

  /** For egress named ports: the (protocol, number) pairs a name resolves to among a pods peer's members. */
  namedPortNumbers(
    peer: Extract<ClusterPeer, { type: 'pods' }>,
    namespace: string,
    name: string,
  ): readonly string[] {
    const key = `${peer.namespaces.selector ? '' : namespace}|${JSON.stringify(peer)}#${name}`;
    const cached = this.numbersMemo.get(key);
    if (cached) return cached;
    const numbers = new Set<string>();
    for (const member of this.podsOf(peer, namespace))
      for (const port of namedPortTargets(member.ports, name)) numbers.add(`${port.protocol}/${port.port}`);
    const list = [...numbers];
    this.numbersMemo.set(key, list);
    return list;
  }

  /** Whether a policy's peers depend on the subject's namespace (v0.1.1 relative peers). */
  static isRelative(policy: ClusterPolicy): boolean {
    return [...policy.ingress, ...policy.egress].some((r) =>
      r.peers.some((p) => p.type === 'pods' && !p.namespaces.selector),
    );
  }

  /** Pods a pods/namespaces peer selects (never host-networked), for a subject in `namespace`. */
  podsOf(peer: Extract<ClusterPeer, { type: 'pods' }>, namespace: string): readonly Endpoint[] {
    const relative = !peer.namespaces.selector;
    const key = `${relative ? namespace : ''}|${JSON.stringify(peer)}`;
    const cached = this.peerMemo.get(key);
    if (cached) return cached;
    const subjectLabels = this.cluster.namespaces.get(namespace)?.labels ?? {};
    const pods: Endpoint[] = [];
    for (const [name, members] of this.podsByNamespace) {
      const labels = this.cluster.namespaces.get(name)?.labels;
      if (!labels || !namespaceMatches(peer.namespaces, labels, subjectLabels)) continue;
      for (const pod of members)
        if (!peer.podSelector || selectorMatches(peer.podSelector, pod.labels)) pods.push(pod);
    }
    this.peerMemo.set(key, pods);
    return pods;
  }

  /**
   * The group of a pods or nodes peer (for a subject in `namespace`: relative peers differ per
   * namespace), registered with its member addresses on first use.
   */
  groupOf(peer: Extract<ClusterPeer, { type: 'pods' | 'nodes' }>, namespace: string): number {
    const relative = peer.type === 'pods' && !peer.namespaces.selector;
    const key = `${relative ? namespace : ''}|${JSON.stringify(peer)}`;
    return this.registerGroup(key, () =>
      peer.type === 'pods'
        ? this.podsOf(peer, namespace).flatMap((pod) => pod.ips)
        : this.nodeAddresses(peer),
    );
  }

  /** The members of a pods peer whose container port `name` is `protocol`/`port` (egress named ports). */
  namedPortGroup(
    peer: Extract<ClusterPeer, { type: 'pods' }>,
    namespace: string,
    name: string,
    protocol: string,
    port: number,
  ): number {
    const relative = !peer.namespaces.selector;
    const key = `${relative ? namespace : ''}|${JSON.stringify(peer)}#${name}=${protocol}/${port}`;
    return this.registerGroup(key, () =>
      this.podsOf(peer, namespace)
        .filter((pod) =>
          namedPortTargets(pod.ports, name).some((p) => p.protocol === protocol && p.port === port),
        )
        .flatMap((pod) => pod.ips),
    );
  }

  private registerGroup(key: string, addresses: () => readonly IpAddress[]): number {
    const known = this.groupIds.get(key);
    if (known !== undefined) return known;
    const id = this.groupLabels.length;
    this.groupIds.set(key, id);
    this.groupLabels.push(key.slice(key.indexOf('|') + 1));
    this.addressGroups.add(id, addresses());
    return id;
  }

  groupsOfV4(address: number): readonly number[] | undefined {
    return this.addressGroups.groupsOfV4(address);
  }

  groupsOfV6(words: Uint32Array): readonly number[] | undefined {
    return this.addressGroups.groupsOfV6(words);
  }

  groupLabel(group: number): string {
    return this.groupLabels[group] ?? String(group);
  }

  /** Addresses of the nodes whose labels the selector matches. */
  nodeAddresses(peer: Extract<ClusterPeer, { type: 'nodes' }>): IpAddress[] {
    const addresses: IpAddress[] = [];
    for (const node of this.cluster.nodes.values())
      if (selectorMatches(peer.selector, node.labels)) addresses.push(...node.addresses);
    return addresses;
  }
}
