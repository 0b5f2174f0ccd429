/**
 * What a list of policies depends on besides itself (from each policy's facts, read at ingest:
 * model/cluster-policy-facts.ts), and the expansions that depend on nothing else, memoized per
 * object (policies and rules are immutable: a changed policy is a new object). Shared by the
 * ordered lists (tier-tables.ts, tier-lists.ts) and the permit tables (configurator.ts).
 */
import type { Cidr } from '../net/ip.ts';
import { ANY_NET, prepareRule, type NetRef, type Rule } from '../model/rule.ts';
import type { ClusterPolicy, NodeInfo, Protocol } from '../model/types.ts';
import { policyFacts, type RuleFacts } from '../model/cluster-policy-facts.ts';
import { ALL_PODS, groupKey, peerNetGroup, type PeerNet } from '../state/index.ts';

type Direction = 'ingress' | 'egress';

/** What a selection's lists depend on besides the policies themselves (see `variant`). */
export interface Dependencies {
  readonly relative: boolean;
  readonly named: boolean;
  readonly nodes: boolean;
  /** Cilium's host and remote-node peers, and NetworkPolicy's tier compiled with the pod's node. */
  readonly subjectNode?: boolean;
}

/**
 * Everything memoized of one rule's expansion, in one record: a table keyed by rules costs an
 * insertion per rule first seen (about a microsecond each, in a heap of 20,000 rules), and a rule
 * used to be the key of three — its nets, named ports' nets and 6-tuples.
 */
interface RuleMemo {
  /** Its nets for numbered ports (and an ingress named port's), when pure (`pureNetRefs`). */
  refs: NetRef[] | undefined;
  /** Its nets for the list of nodes they were made with, when they depend on the nodes alone. */
  byNodes: { readonly nodes: readonly NodeInfo[]; readonly refs: NetRef[] } | undefined;
  /** Its nets per named port entry, when pure (`pureNamedNetsOf`). */
  named: Map<string, PeerNet[]> | undefined;
  /** Its 6-tuples per direction, when it depends on nothing else (`pureRuleRules`). */
  ingress: Rule[] | undefined;
  egress: Rule[] | undefined;
}
/**
 * The rule's memo, kept in its facts (read at ingest: no table entry made per rule here). Callers
 * pass the facts they already hold: each function below takes them for the rule.
 */
function ruleMemo(facts: RuleFacts): RuleMemo {
  return (facts.expansion ??= {
    refs: undefined,
    byNodes: undefined,
    named: undefined,
    ingress: undefined,
    egress: undefined,
  } satisfies RuleMemo) as RuleMemo;
}

/**
 * A pure rule's nets for one named port entry (`name/protocol`), made once per rule object: a
 * named-port rule is expanded again for each pod's ports, and resolving its peers was most of that.
 */
export function pureNamedNetsOf(
  facts: RuleFacts,
  named: { name: string; protocol: Protocol },
  compute: (named: { name: string; protocol: Protocol }) => PeerNet[],
): PeerNet[] {
  const memo = ruleMemo(facts);
  const byEntry = (memo.named ??= new Map<string, PeerNet[]>());
  const key = `${named.name}/${named.protocol}`;
  let nets = byEntry.get(key);
  if (!nets) byEntry.set(key, (nets = compute(named)));
  return nets;
}
/**
 * A pure rule's nets for its numbered ports (and an ingress named port's), as rule nets: made
 * once per rule object.
 */
export function pureNetRefs(facts: RuleFacts, compute: () => PeerNet[]): NetRef[] {
  const memo = ruleMemo(facts);
  return (memo.refs ??= compute().map(netRef));
}
/**
 * The nets of a rule that depends on the nodes and nothing else of the pod (outside blocks, nodes
 * peers that are not the pod's own node), for the numbered ports: made once per rule object and
 * list of nodes — stores of the same cluster share the list (`canonicalNodes`), so the matrix's
 * compiled classes find the blocks the compile cut.
 */
export function nodesNetRefs(
  facts: RuleFacts,
  nodes: readonly NodeInfo[],
  compute: () => PeerNet[],
): NetRef[] {
  const memo = ruleMemo(facts);
  if (memo.byNodes?.nodes !== nodes) memo.byNodes = { nodes, refs: compute().map(netRef) };
  return memo.byNodes.refs;
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
export function pureRuleRules(facts: RuleFacts, direction: Direction, make: () => Rule[]): Rule[] {
  const memo = ruleMemo(facts);
  return (memo[direction] ??= make());
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
    const d = policyFacts(policy);
    relative ||= d.relative;
    named ||= d.named[direction];
    nodes ||= d.nodes;
    subjectNode ||= d.subjectNode;
  }
  return withSubjectNode ? { relative, named, nodes, subjectNode } : { relative, named, nodes };
}

const ALL_PODS_KEY = groupKey(ALL_PODS);

export function netRef(net: PeerNet): NetRef {
  if (net.kind === 'group') return { kind: 'group', group: peerNetGroup(net) };
  if (net.kind === 'any') return ANY_NET;
  // One rule net per block object (blocks are shared: a policy's, and the pieces of an outside
  // block, made once per block and nodes): readers that memoize by net object find it again
  // (the compiled classes' sets), where a net made per expansion was a new key each time.
  const memo = net.kind === 'outside' ? outsideRefs : cidrRefs;
  let ref = memo.get(net.cidr);
  if (!ref)
    memo.set(
      net.cidr,
      (ref =
        net.kind === 'outside'
          ? { kind: 'outside', cidr: net.cidr, pods: ALL_PODS_KEY }
          : { kind: 'cidr', cidr: net.cidr }),
    );
  return ref;
}
const cidrRefs = new WeakMap<Cidr, NetRef>();
const outsideRefs = new WeakMap<Cidr, NetRef>();
