/**
 * What a rule's or a policy's expansion depends on besides itself, and the expansions that
 * depend on nothing else, memoized per object (policies and rules are immutable: a changed policy
 * is a new object). Shared by the ordered lists (tier-tables.ts, tier-lists.ts) and the permit
 * tables (configurator.ts).
 */
import { ANY_NET, prepareRule, type NetRef, type Rule } from '../model/rule.ts';
import type { ClusterPolicy, ClusterRule, Protocol } from '../model/types.ts';
import {
  ALL_PODS,
  groupKey,
  hasNodesPeers,
  hasRelativePeers,
  hasSubjectNodePeers,
  isRelativePeer,
  type PeerNet,
} from '../state/index.ts';

type Direction = 'ingress' | 'egress';

/** What a selection's lists depend on besides the policies themselves (see `variant`). */
export interface Dependencies {
  readonly relative: boolean;
  readonly named: boolean;
  readonly nodes: boolean;
  /** Cilium's host and remote-node peers, and NetworkPolicy's tier compiled with the pod's node. */
  readonly subjectNode?: boolean;
}

/** What a rule's expansion depends on besides itself (read once per rule object). */
interface RuleDependencies {
  readonly relative: boolean;
  readonly named: boolean;
  readonly nodes: boolean;
  readonly own: boolean;
  /** Named ports and nothing else. */
  readonly onlyNamed: boolean;
}
const ruleDependenciesMemo = new WeakMap<ClusterRule, RuleDependencies>();
export function ruleDependencies(rule: ClusterRule): RuleDependencies {
  let found = ruleDependenciesMemo.get(rule);
  if (!found) {
    const relative = rule.peers.some(isRelativePeer);
    const named = rule.ports?.some((p) => p.type === 'named') ?? false;
    const nodes = rule.peers.some((p) => p.type === 'nodes' || p.type === 'outside');
    const own = rule.peers.some((p) => p.type === 'nodes' && p.only !== undefined);
    found = { relative, named, nodes, own, onlyNamed: named && !relative && !nodes && !own };
    ruleDependenciesMemo.set(rule, found);
  }
  return found;
}

/**
 * A rule's nets when they depend on nothing but the rule (no relative peer, node or outside
 * peer), per port entry ('' plain; `name/protocol` a named one): made once per rule object. A
 * named-port rule is expanded again for each pod's ports, and resolving its peers was most of that.
 */
const pureNets = new WeakMap<ClusterRule, Map<string, PeerNet[]>>();
export function pureNetsOf(
  rule: ClusterRule,
  named: { name: string; protocol: Protocol } | undefined,
  compute: (named?: { name: string; protocol: Protocol }) => PeerNet[],
): PeerNet[] {
  let byEntry = pureNets.get(rule);
  if (!byEntry) pureNets.set(rule, (byEntry = new Map<string, PeerNet[]>()));
  const key = named ? `${named.name}/${named.protocol}` : '';
  let nets = byEntry.get(key);
  if (!nets) byEntry.set(key, (nets = compute(named)));
  return nets;
}
/** The plain entry's rule nets if they were made before (see `pureNetRefs`). */
export function knownPureNetRefs(rule: ClusterRule): NetRef[] | undefined {
  return pureRefs.get(rule);
}
/** The plain entry's nets as rule nets, once per rule object (see `pureNets`). */
const pureRefs = new WeakMap<ClusterRule, NetRef[]>();
export function pureNetRefs(rule: ClusterRule, compute: () => PeerNet[]): NetRef[] {
  let refs = pureRefs.get(rule);
  if (!refs) pureRefs.set(rule, (refs = pureNetsOf(rule, undefined, compute).map(netRef)));
  return refs;
}
/**
 * A rule's 6-tuples in canonical order (they share its precedence and action, so their order is
 * free: sorted, equal inputs give equal lists), once per tuples array.
 */
const canonicalOrders = new WeakMap<Rule[], Rule[]>();
export function canonicalOrder(tuples: Rule[]): Rule[] {
  if (tuples.length <= 1) return tuples;
  let sorted = canonicalOrders.get(tuples);
  if (!sorted)
    canonicalOrders.set(
      tuples,
      (sorted = tuples
        .map((r) => prepareRule(r))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map((r) => r.rule)),
    );
  return sorted;
}

/**
 * The 6-tuples of rules that depend on nothing but themselves (no relative peer, named port, node
 * or outside peer): made once per rule object and direction, as NetworkPolicy's templates are
 * made once per policy object (state/policy-groups.ts) — a changed policy is a new object.
 */
const pureRules = {
  ingress: new WeakMap<ClusterRule, Rule[]>(),
  egress: new WeakMap<ClusterRule, Rule[]>(),
};
export function pureRuleRules(rule: ClusterRule, direction: Direction, make: () => Rule[]): Rule[] {
  const memo = pureRules[direction];
  let rules = memo.get(rule);
  if (!rules) memo.set(rule, (rules = make()));
  return rules;
}

/** What one policy's rules depend on, per direction (policies are immutable: read once each). */
interface PolicyDependencies {
  readonly relative: boolean;
  readonly nodes: boolean;
  readonly subjectNode: boolean;
  readonly named: Readonly<Record<Direction, boolean>>;
}
const policyDependencies = new WeakMap<ClusterPolicy, PolicyDependencies>();

function dependenciesOfPolicy(policy: ClusterPolicy): PolicyDependencies {
  let found = policyDependencies.get(policy);
  if (!found) {
    const named = (direction: Direction): boolean =>
      policy[direction].some((r) => r.ports?.some((x) => x.type === 'named') ?? false);
    found = {
      relative: hasRelativePeers(policy),
      nodes: hasNodesPeers(policy),
      subjectNode: hasSubjectNodePeers(policy),
      named: { ingress: named('ingress'), egress: named('egress') },
    };
    policyDependencies.set(policy, found);
  }
  return found;
}

/** What a list of policies depends on for a direction; `subjectNode` when asked (the general path). */
export function dependenciesOf(
  policies: readonly ClusterPolicy[],
  direction: Direction,
  withSubjectNode = false,
): Dependencies {
  let relative = false;
  let named = false;
  let nodes = false;
  let subjectNode = false;
  for (const policy of policies) {
    const d = dependenciesOfPolicy(policy);
    relative ||= d.relative;
    named ||= d.named[direction];
    nodes ||= d.nodes;
    subjectNode ||= d.subjectNode;
  }
  return withSubjectNode ? { relative, named, nodes, subjectNode } : { relative, named, nodes };
}

const ALL_PODS_KEY = groupKey(ALL_PODS);

export function netRef(net: PeerNet): NetRef {
  if (net.kind === 'group') return { kind: 'group', group: groupKey(net.spec) };
  if (net.kind === 'outside') return { kind: 'outside', cidr: net.cidr, pods: ALL_PODS_KEY };
  return net.kind === 'cidr' ? { kind: 'cidr', cidr: net.cidr } : ANY_NET;
}
