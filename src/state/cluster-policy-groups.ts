/**
 * What a cluster-policy rule's peers stand for as nets — address groups for pods and namespaces
 * peers (shared with NetworkPolicy peers of the same selectors), CIDRs for networks, node
 * addresses for nodes peers; domain names stand for nothing a datapath can match. The store
 * (to hold the groups) and the configurator (to reference them) use this one expansion.
 *
 * v0.1.1's relative peers (sameLabels, notSameLabels) become ordinary namespace selectors once
 * the subject's namespace is known.
 */
import { familyBits, hostCidr, ipKey, type Cidr, type IpAddress } from '../net/ip.ts';
import { labelSetKey } from './label-sets.ts';
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
import { NAMESPACE_NAME_LABEL, PROTOCOLS } from '../model/types.ts';
import { selectorMatches } from '../model/selector.ts';
import { isRelativePeer, policyFacts, type RuleFacts } from '../model/cluster-policy-facts.ts';
import type { PeerNet } from './policy-groups.ts';
import type { GroupSpec } from './types.ts';
import { FirstAndMore } from '../util/first-and-more.ts';
import { groupKey } from './group-key.ts';

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

/** A group a peer or policy stands for: its spec, and its key made once. */
interface GroupUse {
  readonly key: string;
  readonly spec: GroupSpec;
}

/**
 * The group the rule's pods/namespaces peer at `place` stands for (optionally one named port's
 * members on one protocol). A peer that is not relative stands for one group whatever the
 * subject: its spec and key are made once per rule, peer and named port, so that the store's
 * groups and the compiler's nets share one spec and one key string — each was made again for
 * every rule the compiler expanded, and its key hashed anew. Kept in the rule's facts (read at
 * ingest), by the peer's place: a table keyed by peers took an entry for each peer first seen.
 */
function clusterPeerGroupUse(
  facts: RuleFacts,
  peers: readonly ClusterPeer[],
  place: number,
  peer: Extract<ClusterPeer, { type: 'pods' }>,
  subjectLabels: Labels,
  namedPort?: { readonly name: string; readonly protocol: Protocol },
): GroupUse {
  if (isRelativePeer(peer)) return groupUse(peerGroupSpec(peer, subjectLabels, namedPort));
  // By peer, its uses by named port ('': its plain group), the first one asked for kept inline.
  // One slot per peer (kept: a list grown by index reserves room for 17, util/exact-array.ts).
  const byPeer = (facts.peerGroups ??= new Array<undefined>(peers.length)) as (
    FirstAndMore<string, GroupUse> | undefined
  )[];
  const entry = namedPort ? `${namedPort.name}/${namedPort.protocol}` : '';
  const uses = byPeer[place];
  let use = uses?.get(entry);
  if (!use) {
    use = groupUse(peerGroupSpec(peer, subjectLabels, namedPort));
    if (uses) uses.set(entry, use);
    else byPeer[place] = new FirstAndMore(entry, use);
  }
  return use;
}

function peerGroupSpec(
  peer: Extract<ClusterPeer, { type: 'pods' }>,
  subjectLabels: Labels,
  namedPort?: { readonly name: string; readonly protocol: Protocol },
): GroupSpec {
  // Fields set one by one, not spread: a conditional spread is the runtime's slow copy.
  const selector = namespaceSelectorFor(peer.namespaces, subjectLabels);
  const named = namespaceNamed(selector);
  const spec: { -readonly [K in keyof GroupSpec]: GroupSpec[K] } =
    named === undefined ? { namespaceSelector: selector } : { namespace: named };
  if (peer.podSelector && peer.podSelector.key !== '') spec.podSelector = peer.podSelector;
  if (namedPort) spec.namedPort = namedPort;
  return spec;
}

/**
 * The one namespace a selector names by its name label, if that is all it asks: Calico's
 * `projectcalico.org/namespace == 'x'` and Cilium's `k8s:io.kubernetes.pod.namespace` (how
 * their peers in the policy's own namespace are written) read so. Every namespace carries its
 * name as that label, so the group is the namespace's, as NetworkPolicy's own-namespace peers
 * are: found by name, where a selector is tested against the namespaces its label reaches.
 */
function namespaceNamed(selector: LabelSelector): string | undefined {
  if (selector.requirements.length !== 1) return undefined;
  const only = selector.requirements[0] as LabelSelector['requirements'][number];
  return only.key === NAMESPACE_NAME_LABEL && only.operator === 'In' && only.values.length === 1
    ? only.values[0]
    : undefined;
}

/** The group of every pod (outside peers are the addresses no member of it has). */
export const ALL_PODS: GroupSpec = { namespaceSelector: MATCH_ALL };
const ALL_PODS_USE = groupUse(ALL_PODS);

function groupUse(spec: GroupSpec): GroupUse {
  return { key: groupKey(spec), spec };
}

/** The pods among some addresses that expose a named port (an egress named port's destinations). */
function addressGroupUse(cidrs: readonly Cidr[], namedPort: GroupSpec['namedPort']): GroupUse {
  return groupUse({ ipBlock: { cidr: [...cidrs], podsOnly: true }, namedPort });
}

/**
 * The nets of a rule for one port entry: `named` set for an egress named port (then only the
 * peers that can be pods count — partitioned by the number the name resolves to on each
 * protocol; addresses through an address group that keeps only the pods exposing it).
 * `subjectNode` is the subject pod's node, for Cilium's host and remote-node peers.
 */
export function clusterRuleNets(
  rule: ClusterRule,
  facts: RuleFacts,
  subjectLabels: Labels,
  nodes: Iterable<NodeInfo>,
  named?: { readonly name: string; readonly protocol: Protocol },
  subjectNode?: string,
): PeerNet[] {
  // Sorted (only when needed): the same nodes give the same rules whatever order they arrived in.
  // One loop pushing into one array: this runs for every rule the compiler expands.
  let nodeList: readonly NodeInfo[] | undefined;
  const nets: PeerNet[] = [];
  const viaAddresses = (cidrs: readonly Cidr[]): void => {
    if (!named) for (const cidr of cidrs) nets.push({ kind: 'cidr', cidr });
    else if (cidrs.length > 0) {
      const use = addressGroupUse(cidrs, named);
      nets.push({ kind: 'group', spec: use.spec, key: use.key });
    }
  };
  const peers = rule.peers;
  for (let place = 0; place < peers.length; place++) {
    const peer = peers[place] as ClusterPeer;
    if (peer.type === 'pods') {
      const use = clusterPeerGroupUse(facts, peers, place, peer, subjectLabels, named);
      nets.push({ kind: 'group', spec: use.spec, key: use.key });
    } else if (peer.type === 'networks') viaAddresses(peer.cidrs);
    else if (peer.type === 'nodes') {
      const cidrs: Cidr[] = [];
      for (const node of (nodeList ??= sortedNodes(nodes))) {
        if (peer.only === 'own' && node.name !== subjectNode) continue;
        if (peer.only === 'others' && node.name === subjectNode) continue;
        if (selectorMatches(peer.selector, node.labels))
          for (const ip of node.addresses) cidrs.push(hostCidr(ip));
      }
      viaAddresses(cidrs);
    } else if (peer.type === 'outside') {
      if (named) continue; // no pod is outside: a named port resolves on none of it
      const list = (nodeList ??= sortedNodes(nodes));
      for (const cidr of peer.cidrs)
        for (const piece of outsidePieces(list, cidr)) nets.push({ kind: 'outside', cidr: piece });
    }
    // domainNames: nothing a datapath without name resolution can match
  }
  return nets;
}

/**
 * Per list of nodes (the store's is one array per version): it sorted, and blocks less its
 * addresses — and less the host-network pods' the store gave with the list.
 */
const byNodes = new WeakMap<
  Iterable<NodeInfo>,
  {
    readonly sorted: readonly NodeInfo[];
    hostNetwork?: readonly IpAddress[];
    addresses?: Cidr[];
    readonly pieces: Map<string, Cidr[]>;
  }
>();

function nodesEntry(nodes: Iterable<NodeInfo>) {
  let entry = byNodes.get(nodes);
  if (!entry) {
    const sorted = [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    byNodes.set(nodes, (entry = { sorted, pieces: new Map() }));
  }
  return entry;
}

/**
 * Host-network pods' addresses to leave out of outside blocks with this list of nodes' (given by
 * the store as it makes the list, before any block is cut by it): a host-network pod's address is
 * a node's, whether or not the input has that Node, and a node is never outside the cluster.
 */
function withHostNetworkAddresses(nodes: readonly NodeInfo[], addresses: readonly IpAddress[]): void {
  const entry = nodesEntry(nodes);
  entry.hostNetwork = addresses;
  // Blocks are cut by the sorted copy (`clusterRuleNets`), whose entry is its own.
  nodesEntry(entry.sorted).hostNetwork = addresses;
}

/**
 * One list per content of the nodes (names, addresses, labels) and host-network addresses: two
 * stores of the same cluster — the matrix's compiled classes beside the compile — get the same
 * array, so the blocks cut by it (`outsidePieces`) and the rules expanded with it are found made
 * rather than cut again in every store. A few lists are kept (the nodes of a running cluster
 * change rarely, each change a new list).
 */
export function canonicalNodes(
  nodes: readonly NodeInfo[],
  hostNetwork: readonly IpAddress[],
): readonly NodeInfo[] {
  let key = '';
  for (const node of nodes) {
    key += `${node.name}\u0001${node.declared ? 1 : 0}`;
    for (const ip of node.addresses) key += `\u0001${ipKey(ip)}`;
    key += `\u0002${labelSetKey(node.labels)}\u0003`;
  }
  for (const ip of hostNetwork) key += `\u0004${ipKey(ip)}`;
  const known = canonicalLists.get(key);
  if (known) return known;
  if (hostNetwork.length > 0) withHostNetworkAddresses(nodes, hostNetwork);
  if (canonicalLists.size >= MAX_NODE_LISTS) canonicalLists.clear();
  canonicalLists.set(key, nodes);
  return nodes;
}
const canonicalLists = new Map<string, readonly NodeInfo[]>();
const MAX_NODE_LISTS = 8;

function sortedNodes(nodes: Iterable<NodeInfo>): readonly NodeInfo[] {
  return nodesEntry(nodes).sorted;
}

/**
 * A block less the nodes' addresses (outside the cluster), computed once per block and nodes.
 * Only the addresses inside the block are subtracted, found by binary search in the sorted
 * addresses: a block holding none of a thousand nodes was a thousand bigint steps.
 */
function outsidePieces(nodes: readonly NodeInfo[], cidr: Cidr): Cidr[] {
  const entry = nodesEntry(nodes);
  let pieces = entry.pieces.get(cidr.text);
  if (!pieces) {
    entry.addresses ??= [...nodes.flatMap((node) => node.addresses), ...(entry.hostNetwork ?? [])]
      .map(hostCidr)
      .sort((a, b) => a.family - b.family || (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
    const inside = addressesIn(entry.addresses, cidr);
    entry.pieces.set(cidr.text, (pieces = inside.length === 0 ? [cidr] : subtractCidrs(cidr, inside)));
  }
  return pieces;
}

/** The host addresses (sorted by family, then address) that lie in a block. */
function addressesIn(sorted: readonly Cidr[], block: Cidr): readonly Cidr[] {
  const last = block.base + (1n << BigInt(familyBits(block.family) - block.prefix)) - 1n;
  const before = (a: Cidr): boolean =>
    a.family < block.family || (a.family === block.family && a.base < block.base);
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (before(sorted[middle] as Cidr)) low = middle + 1;
    else high = middle;
  }
  let end = low;
  while (
    end < sorted.length &&
    (sorted[end] as Cidr).family === block.family &&
    (sorted[end] as Cidr).base <= last
  )
    end++;
  return sorted.slice(low, end);
}

/**
 * The groups a policy holds regardless of subject, each once: made once per policy object
 * (policies are immutable), as NetworkPolicy's templates carry their groups — a second store
 * over the same policies (the matrix's compiled classes) finds them made.
 */
export function clusterPolicyGroupUses(policy: ClusterPolicy): readonly GroupUse[] {
  // Kept in the policy's facts (read at ingest), not a table keyed by policies: an entry made per
  // policy cost the compile more than making the list.
  const facts = policyFacts(policy);
  let uses = facts.groups as readonly GroupUse[] | undefined;
  if (!uses) {
    const rulesFacts = facts.rules;
    const byKey = new Map<string, GroupUse>();
    const add = (use: GroupUse): void => {
      if (!byKey.has(use.key)) byKey.set(use.key, use);
    };
    for (const direction of ['ingress', 'egress'] as const) {
      const rules = policy[direction];
      for (let at = 0; at < rules.length; at++) {
        const rule = rules[at] as ClusterRule;
        const peers = rule.peers;
        const ruleFacts = rulesFacts[direction][at] as RuleFacts;
        for (let place = 0; place < peers.length; place++) {
          const peer = peers[place] as ClusterPeer;
          if (peer.type === 'outside') add(ALL_PODS_USE);
          if (direction === 'egress' && peer.type === 'networks')
            for (const port of rule.ports ?? [])
              if (port.type === 'named')
                for (const protocol of namedProtocols(port))
                  add(addressGroupUse(peer.cidrs, { name: port.name, protocol }));
          if (peer.type !== 'pods' || isRelativePeer(peer)) continue;
          add(clusterPeerGroupUse(ruleFacts, peers, place, peer, {}));
          if (direction !== 'egress') continue;
          for (const port of rule.ports ?? [])
            if (port.type === 'named')
              for (const protocol of namedProtocols(port))
                add(clusterPeerGroupUse(ruleFacts, peers, place, peer, {}, { name: port.name, protocol }));
        }
      }
    }
    facts.groups = uses = [...byKey.values()];
  }
  return uses;
}

/**
 * The protocols an egress named port expands on: its own, or every protocol when it names none.
 * The store builds the port's partition groups on these, and the compiler reads those alone.
 */
export function namedProtocols(port: { readonly protocol?: Protocol }): readonly Protocol[] {
  return port.protocol !== undefined ? [port.protocol] : PROTOCOLS;
}

const nodesPeers = new WeakMap<ClusterPolicy, boolean>();

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
