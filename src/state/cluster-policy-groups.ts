/**
 * What a cluster-policy rule's peers stand for as nets — address groups for pods and namespaces
 * peers (shared with NetworkPolicy peers of the same selectors), CIDRs for networks, node
 * addresses for nodes peers; domain names stand for nothing a datapath can match. The store
 * (to hold the groups) and the configurator (to reference them) use this one expansion.
 *
 * v0.1.1's relative peers (sameLabels, notSameLabels) become ordinary namespace selectors once
 * the subject's namespace is known.
 */
import { hostCidr } from '../net/ip.ts';
import { makeSelector, type LabelSelector } from '../model/selector.ts';
import type {
  ClusterPeer,
  ClusterPolicy,
  ClusterRule,
  Labels,
  NamespaceMatch,
  NodeInfo,
  Protocol,
} from '../model/types.ts';
import { PROTOCOLS } from '../model/types.ts';
import { selectorMatches } from '../model/selector.ts';
import type { PeerNet } from './policy-groups.ts';
import type { GroupSpec } from './types.ts';

/** Matches no label set: a key that both exists and does not. */
const NOTHING = (key: string): LabelSelector =>
  makeSelector({}, [
    { key, operator: 'Exists', values: [] },
    { key, operator: 'DoesNotExist', values: [] },
  ]);

/** A peer's namespace match as a selector, for a subject in a namespace with these labels. */
export function namespaceSelectorFor(match: NamespaceMatch, subjectLabels: Labels): LabelSelector {
  if (match.selector) return match.selector;
  const keys = match.sameLabels ?? match.notSameLabels ?? [];
  if (keys.length === 0) return NOTHING('palisade.dev/empty');
  if (match.sameLabels) {
    const missing = keys.find((k) => !(k in subjectLabels));
    if (missing !== undefined) return NOTHING(missing);
    return makeSelector(Object.fromEntries(keys.map((k) => [k, subjectLabels[k] as string])), []);
  }
  return makeSelector(
    {},
    keys.flatMap((key) => [
      { key, operator: 'Exists' as const, values: [] },
      ...(key in subjectLabels
        ? [{ key, operator: 'NotIn' as const, values: [subjectLabels[key] as string] }]
        : []),
    ]),
  );
}

export function isRelativePeer(peer: ClusterPeer): boolean {
  return peer.type === 'pods' && !peer.namespaces.selector;
}

/** The group a pods/namespaces peer stands for (optionally one named port's members on one protocol). */
export function clusterPeerGroupSpec(
  peer: Extract<ClusterPeer, { type: 'pods' }>,
  subjectLabels: Labels,
  namedPort?: { readonly name: string; readonly protocol: Protocol },
): GroupSpec {
  return {
    namespaceSelector: namespaceSelectorFor(peer.namespaces, subjectLabels),
    ...(peer.podSelector && peer.podSelector.key !== '' ? { podSelector: peer.podSelector } : {}),
    ...(namedPort ? { namedPort } : {}),
  };
}

/**
 * The nets of a rule for one port entry: `named` set for an egress named port (then only pod
 * peers count, partitioned by the number the name resolves to on each protocol).
 */
export function clusterRuleNets(
  rule: ClusterRule,
  subjectLabels: Labels,
  nodes: Iterable<NodeInfo>,
  named?: { readonly name: string; readonly protocol: Protocol },
): PeerNet[] {
  // Sorted (only when needed): the same nodes give the same rules whatever order they arrived in.
  const nodeList = rule.peers.some((p) => p.type === 'nodes')
    ? [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    : [];
  return rule.peers.flatMap((peer): PeerNet[] => {
    if (peer.type === 'pods')
      return [{ kind: 'group', spec: clusterPeerGroupSpec(peer, subjectLabels, named) }];
    if (named) return [];
    if (peer.type === 'networks') return peer.cidrs.map((cidr) => ({ kind: 'cidr', cidr }));
    if (peer.type === 'nodes') {
      const nets: PeerNet[] = [];
      for (const node of nodeList)
        if (selectorMatches(peer.selector, node.labels))
          for (const ip of node.addresses) nets.push({ kind: 'cidr', cidr: hostCidr(ip) });
      return nets;
    }
    return []; // domainNames: nothing a datapath without name resolution can match
  });
}

/** Group specs a policy holds regardless of subject (its peers that are not relative). */
export function clusterPolicyGroupSpecs(policy: ClusterPolicy): GroupSpec[] {
  const specs: GroupSpec[] = [];
  for (const direction of ['ingress', 'egress'] as const) {
    for (const rule of policy[direction]) {
      for (const peer of rule.peers) {
        if (peer.type !== 'pods' || isRelativePeer(peer)) continue;
        specs.push(clusterPeerGroupSpec(peer, {}));
        if (direction !== 'egress') continue;
        for (const port of rule.ports ?? [])
          if (port.type === 'named')
            for (const protocol of PROTOCOLS)
              specs.push(clusterPeerGroupSpec(peer, {}, { name: port.name, protocol }));
      }
    }
  }
  return specs;
}

const nodesPeers = new WeakMap<ClusterPolicy, boolean>();
const relativePeers = new WeakMap<ClusterPolicy, boolean>();

export function hasNodesPeers(policy: ClusterPolicy): boolean {
  let known = nodesPeers.get(policy);
  if (known === undefined)
    nodesPeers.set(
      policy,
      (known = [...policy.ingress, ...policy.egress].some((r) => r.peers.some((p) => p.type === 'nodes'))),
    );
  return known;
}

export function hasRelativePeers(policy: ClusterPolicy): boolean {
  let known = relativePeers.get(policy);
  if (known === undefined)
    relativePeers.set(
      policy,
      (known = [...policy.ingress, ...policy.egress].some((r) => r.peers.some(isRelativePeer))),
    );
  return known;
}
