/**
 * What tier tables are built from, read from a cluster snapshot: which cluster policies select a
 * pod (per tier and direction), and the addresses a cluster-policy peer stands for — pods by
 * namespace and pod selector (namespaces indexed, selectors memoized), node addresses by node
 * labels, networks as they are. Relative v0.1.1 peers (sameLabels, notSameLabels) resolve against
 * the subject's namespace.
 */
import type { IpAddress } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import { namespaceMatches, subjectSelects } from '../model/cluster-policy.ts';
import type { Cluster, ClusterPeer, ClusterPolicy, Endpoint, Tier } from '../model/types.ts';

export class TierSources {
  private readonly podsByNamespace = new Map<string, Endpoint[]>();
  private readonly peerMemo = new Map<string, readonly Endpoint[]>();
  private readonly selectionMemo = new Map<string, readonly ClusterPolicy[]>();

  constructor(readonly cluster: Cluster) {
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

  /** Policies of a tier selecting the pod with rules in the direction, in precedence order. */
  selecting(pod: Endpoint, tier: Tier, direction: 'ingress' | 'egress'): readonly ClusterPolicy[] {
    const key = `${tier}|${direction}|${pod.namespace}|${JSON.stringify(pod.labels)}`;
    const cached = this.selectionMemo.get(key);
    if (cached) return cached;
    const labels = this.cluster.namespaces.get(pod.namespace)?.labels;
    const found = this.cluster.clusterPolicies.filter(
      (p) => p.tier === tier && p[direction].length > 0 && subjectSelects(p.subject, labels, pod),
    );
    this.selectionMemo.set(key, found);
    return found;
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

  /** Addresses of the nodes whose labels the selector matches. */
  nodeAddresses(peer: Extract<ClusterPeer, { type: 'nodes' }>): IpAddress[] {
    const addresses: IpAddress[] = [];
    for (const node of this.cluster.nodes.values())
      if (selectorMatches(peer.selector, node.labels)) addresses.push(...node.addresses);
    return addresses;
  }
}
