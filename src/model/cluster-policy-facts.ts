/**
 * What a cluster policy's rules depend on besides themselves, and what they allow, read once per
 * object (policies and rules are immutable: a changed policy is a new object). Ingest reads them
 * as it decodes each policy (ingest/decode-object.ts), while the policy's objects are fresh in the
 * cache: read first by the compile, they cost three times the work itself, which was most of what
 * Calico's and Cilium's compile paid over NetworkPolicy's. The compile then only looks them up.
 */
import type { ClusterPeer, ClusterPolicy, ClusterRule } from './cluster-policy.ts';
import { identityLabelsRead } from './identity-labels.ts';

type Direction = 'ingress' | 'egress';
const DIRECTIONS = ['ingress', 'egress'] as const;

/** A pods peer in the subject's own namespace (its members depend on the subject). */
export function isRelativePeer(peer: ClusterPeer): boolean {
  return peer.type === 'pods' && !peer.namespaces.selector;
}

/** What a rule's expansion depends on besides itself. */
export interface RuleFacts {
  readonly relative: boolean;
  readonly named: boolean;
  /** A node or outside peer (outside blocks are cut by the nodes' addresses). */
  readonly nodes: boolean;
  /** A node peer of the subject's own node only. */
  readonly own: boolean;
  /** Named ports and nothing else. */
  readonly onlyNamed: boolean;
  /** Its nets depend on nothing but the rule: no relative peer, node or outside peer. */
  readonly pure: boolean;
  /**
   * What the compile keeps of the rule's expansion (configurator/expansion-memos.ts), held here
   * because the facts are made at ingest: a table keyed by rules took an entry for each rule the
   * compile first saw — a microsecond and more each, and work for every garbage collection.
   */
  expansion: object | undefined;
  /** The groups its pods peers stand for, by peer (state/cluster-policy-groups.ts): as `expansion`. */
  peerGroups: (object | undefined)[] | undefined;
}

/** A rule's facts read from the rule alone (`policyFacts` keeps them). */
export function readRuleFacts(rule: ClusterRule): RuleFacts {
  let relative = false;
  let nodes = false;
  let own = false;
  for (const peer of rule.peers) {
    relative ||= isRelativePeer(peer);
    nodes ||= peer.type === 'nodes' || peer.type === 'outside';
    own ||= peer.type === 'nodes' && peer.only !== undefined;
  }
  const named = rule.ports?.some((p) => p.type === 'named') ?? false;
  const pure = !relative && !nodes && !own;
  return {
    relative,
    named,
    nodes,
    own,
    onlyNamed: named && pure,
    pure,
    expansion: undefined,
    peerGroups: undefined,
  };
}

/**
 * What one policy's rules depend on, per direction, and whether they only allow, each to peers a
 * permit side can hold (`permits`: pods, nodes, networks, and outside blocks — a CIDR less the
 * pods and nodes; a domain name is none), and whether an outside block is among them
 * (`outside`).
 */
interface PolicyFacts {
  readonly relative: boolean;
  readonly nodes: boolean;
  readonly subjectNode: boolean;
  readonly named: Readonly<Record<Direction, boolean>>;
  readonly permits: Readonly<Record<Direction, boolean>>;
  readonly outside: Readonly<Record<Direction, boolean>>;
  /** Which engines' service-account labels its selectors read (model/identity-labels.ts bits). */
  readonly identityLabels: number;
  /** The groups the store holds for the policy (state/cluster-policy-groups.ts): as `expansion`. */
  groups: readonly object[] | undefined;
  /**
   * Its rules' facts by their place in the direction's list, the only ones made: not a table
   * keyed by rule, whose entry per rule cost ingest half a microsecond and more each (23,000 at
   * the engines benchmark) and left every later garbage collection that many weak entries. A
   * compile holding the policy makes one lookup per policy.
   */
  readonly rules: Readonly<Record<Direction, readonly RuleFacts[]>>;
}

const policyFactsMemo = new WeakMap<ClusterPolicy, PolicyFacts>();

/** The policy's facts, read in one pass over its rules (each rule's from its own facts). */
export function policyFacts(policy: ClusterPolicy): PolicyFacts {
  let facts = policyFactsMemo.get(policy);
  if (!facts) policyFactsMemo.set(policy, (facts = readPolicy(policy)));
  return facts;
}

/**
 * Gives `copy` the facts read for `policy`: a copy with the same rules and subjects (Calico's
 * policies stamped with their Tier's spec) has the same facts, and its memos are the original's.
 */
export function shareFacts(policy: ClusterPolicy, copy: ClusterPolicy): void {
  policyFactsMemo.set(copy, policyFacts(policy));
}

function readPolicy(policy: ClusterPolicy): PolicyFacts {
  let relative = false;
  let nodes = false;
  let subjectNode = false;
  const named = { ingress: false, egress: false };
  const permits = { ingress: true, egress: true };
  const outside = { ingress: false, egress: false };
  let identityLabels = identityLabelsRead(policy.subject.podSelector);
  for (const subject of policy.moreSubjects ?? []) identityLabels |= identityLabelsRead(subject.podSelector);
  // Each list at its exact size (`map`; a pushed one reserves room for 17: util/exact-array.ts).
  const rules = { ingress: policy.ingress.map(readRuleFacts), egress: policy.egress.map(readRuleFacts) };
  for (const direction of DIRECTIONS)
    for (let at = 0; at < policy[direction].length; at++) {
      const rule = policy[direction][at] as ClusterRule;
      const d = rules[direction][at] as RuleFacts;
      relative ||= d.relative;
      nodes ||= d.nodes;
      subjectNode ||= d.own;
      named[direction] ||= d.named;
      if (rule.action !== 'allow') permits[direction] = false;
      for (const peer of rule.peers) {
        if (peer.type === 'pods') identityLabels |= identityLabelsRead(peer.podSelector);
        if (peer.type === 'outside') outside[direction] = true;
        else if (peer.type !== 'pods' && peer.type !== 'nodes' && peer.type !== 'networks')
          permits[direction] = false;
      }
    }
  return { relative, nodes, subjectNode, named, permits, outside, identityLabels, groups: undefined, rules };
}
