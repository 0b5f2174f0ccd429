/**
 * What a cluster-policy rule's peers stand for as nets — address groups for pods and namespaces
 * peers (shared with NetworkPolicy peers of the same selectors), CIDRs for networks, node
 * addresses for nodes peers; domain names stand for nothing a datapath can match. The store
 * (to hold the groups) and the configurator (to reference them) use this one expansion.
 *
 * v0.1.1's relative peers (sameLabels, notSameLabels) become ordinary namespace selectors once
 * the subject's namespace is known.
 */
import { hostCidr, type Cidr } from '../net/ip.ts';
import { subtractCidrs } from '../net/subtract.ts';
import { makeSelector, MATCH_ALL, type LabelSelector } from '../model/selector.ts';
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
function namespaceSelectorFor(match: NamespaceMatch, subjectLabels: Labels): LabelSelector {
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
function clusterPeerGroupSpec(
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

/** The group of every pod (outside peers are the addresses no member of it has). */
export const ALL_PODS: GroupSpec = { namespaceSelector: MATCH_ALL };

/**
 * The nets of a rule for one port entry: `named` set for an egress named port (then only the
 * peers that can be pods count — partitioned by the number the name resolves to on each
 * protocol; addresses through an address group that keeps only the pods exposing it).
 * `subjectNode` is the subject pod's node, for Cilium's host and remote-node peers.
 */
export function clusterRuleNets(
  rule: ClusterRule,
  subjectLabels: Labels,
  nodes: Iterable<NodeInfo>,
  named?: { readonly name: string; readonly protocol: Protocol },
  subjectNode?: string,
): PeerNet[] {
  // Sorted (only when needed): the same nodes give the same rules whatever order they arrived in.
  const nodeList = rule.peers.some((p) => p.type === 'nodes' || p.type === 'outside')
    ? sortedNodes(nodes)
    : [];
  const viaAddresses = (cidrs: readonly Cidr[]): PeerNet[] =>
    named
      ? cidrs.length > 0
        ? [{ kind: 'group', spec: { ipBlock: { cidr: [...cidrs], podsOnly: true }, namedPort: named } }]
        : []
      : cidrs.map((cidr) => ({ kind: 'cidr', cidr }));
  return rule.peers.flatMap((peer): PeerNet[] => {
    if (peer.type === 'pods')
      return [{ kind: 'group', spec: clusterPeerGroupSpec(peer, subjectLabels, named) }];
    if (peer.type === 'networks') return viaAddresses(peer.cidrs);
    if (peer.type === 'nodes') {
      const cidrs: Cidr[] = [];
      for (const node of nodeList) {
        if (peer.only === 'own' && node.name !== subjectNode) continue;
        if (peer.only === 'others' && node.name === subjectNode) continue;
        if (selectorMatches(peer.selector, node.labels))
          for (const ip of node.addresses) cidrs.push(hostCidr(ip));
      }
      return viaAddresses(cidrs);
    }
    if (peer.type === 'outside') {
      if (named) return []; // no pod is outside: a named port resolves on none of it
      return peer.cidrs.flatMap((cidr) =>
        outsidePieces(nodeList, cidr).map((piece): PeerNet => ({ kind: 'outside', cidr: piece })),
      );
    }
    return []; // domainNames: nothing a datapath without name resolution can match
  });
}

/** Per list of nodes (the store's is one array per version): it sorted, and blocks less its addresses. */
const byNodes = new WeakMap<
  Iterable<NodeInfo>,
  { readonly sorted: readonly NodeInfo[]; addresses?: Cidr[]; readonly pieces: Map<string, Cidr[]> }
>();

function nodesEntry(nodes: Iterable<NodeInfo>) {
  let entry = byNodes.get(nodes);
  if (!entry) {
    const sorted = [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    byNodes.set(nodes, (entry = { sorted, pieces: new Map() }));
  }
  return entry;
}

function sortedNodes(nodes: Iterable<NodeInfo>): readonly NodeInfo[] {
  return nodesEntry(nodes).sorted;
}

/** A block less the nodes' addresses (outside the cluster), computed once per block and nodes. */
function outsidePieces(nodes: readonly NodeInfo[], cidr: Cidr): Cidr[] {
  const entry = nodesEntry(nodes);
  let pieces = entry.pieces.get(cidr.text);
  if (!pieces) {
    entry.addresses ??= nodes.flatMap((node) => node.addresses.map(hostCidr));
    entry.pieces.set(cidr.text, (pieces = subtractCidrs(cidr, entry.addresses)));
  }
  return pieces;
}

/** Group specs a policy holds regardless of subject (its peers that are not relative). */
export function clusterPolicyGroupSpecs(policy: ClusterPolicy): GroupSpec[] {
  const specs: GroupSpec[] = [];
  for (const direction of ['ingress', 'egress'] as const) {
    for (const rule of policy[direction]) {
      for (const peer of rule.peers) {
        if (peer.type === 'outside') specs.push(ALL_PODS);
        if (direction === 'egress' && peer.type === 'networks')
          for (const port of rule.ports ?? [])
            if (port.type === 'named')
              for (const protocol of PROTOCOLS)
                specs.push({
                  ipBlock: { cidr: [...peer.cidrs], podsOnly: true },
                  namedPort: { name: port.name, protocol },
                });
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

/** Whether a policy's nets depend on the nodes: nodes peers, and outside ones (node addresses are left out). */
export function hasNodesPeers(policy: ClusterPolicy): boolean {
  let known = nodesPeers.get(policy);
  if (known === undefined)
    nodesPeers.set(
      policy,
      (known = [...policy.ingress, ...policy.egress].some((r) =>
        r.peers.some((p) => p.type === 'nodes' || p.type === 'outside'),
      )),
    );
  return known;
}

const subjectNodePeers = new WeakMap<ClusterPolicy, boolean>();

/** Whether a policy's nets depend on the subject's node (Cilium's host and remote-node). */
export function hasSubjectNodePeers(policy: ClusterPolicy): boolean {
  let known = subjectNodePeers.get(policy);
  if (known === undefined)
    subjectNodePeers.set(
      policy,
      (known = [...policy.ingress, ...policy.egress].some((r) =>
        r.peers.some((p) => p.type === 'nodes' && p.only !== undefined),
      )),
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
