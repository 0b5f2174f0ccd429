/**
 * A pod side's ordered lists when Calico's tiers or Calico's or Cilium's policies are in the
 * store (the network-policy-api alone keeps tier-tables.ts's Admin/Baseline pair): every tier
 * the side visits, in order (model/tier-order.ts), as 6-tuples — the tiers before NetworkPolicy's
 * in `admin`, those after in `baseline`, a break where each tier starts (a pass skips to it), and
 * a deny-everything rule closing a tier whose default action denies what none of its rules did.
 * When Calico's or Cilium's policies select the pod in NetworkPolicy's tier, that tier goes into
 * `admin` as well, in the reference evaluator's order (semantics/default-tier.ts): Calico's
 * policies by order, and at order 1000 Cilium's deny rules, the pod's own node (allowed, as
 * NetworkPolicy allows it), Cilium's allow rules and the NetworkPolicy table's permits.
 */
import { hash } from 'node:crypto';
import { hostCidr } from '../net/ip.ts';
import {
  DEFAULT_TIER,
  NETWORK_POLICY_ORDER,
  policyEngine,
  policyIsolates,
  type ClusterPolicy,
  type ClusterRule,
  type TierSpec,
} from '../model/cluster-policy.ts';
import { calicoTieText, tieBreak } from '../model/precedence.ts';
import { ANY_NET, ruleText, type Rule, type RuleTable } from '../model/rule.ts';
import type { Endpoint, NodeInfo } from '../model/types.ts';
import type { CompilingStore, TierSelection } from '../state/index.ts';
import type { TieredTable } from './types.ts';

type Direction = 'ingress' | 'egress';

/** Expands one policy's rules for a pod (tier-tables.ts): the same 6-tuples both paths use. */
type PolicyRules = (pod: Endpoint, policy: ClusterPolicy, direction: Direction) => readonly Rule[];
/** Expands one rule of a policy; `at` is its place in `policy[direction]` (its facts are kept by it). */
type RuleRules = (
  pod: Endpoint,
  policy: ClusterPolicy,
  rule: ClusterRule,
  at: number,
  direction: Direction,
) => Rule[];

/** Keys of the rules the compiler adds (they name no policy rule): under any policy's, since hashes are 24 bits. */
const SYNTHETIC = 2 ** 52;
const NETWORK_POLICY_KEY = SYNTHETIC + 1;
const NODE_KEY = SYNTHETIC + 2;
const tierEndKey = (tier: string): number =>
  SYNTHETIC + 4 + tieBreak({ kind: 'ClusterNetworkPolicy', name: tier });

/** One list being built: its rules, where each tier starts, and whether a pass needs the starts. */
class ListBuilder {
  readonly rules: Rule[] = [];
  readonly starts: number[] = [];
  /** The first tier holding a pass rule (then the starts are needed when another tier follows). */
  private passAt = -1;

  startTier(): void {
    if (this.rules.length > 0) this.starts.push(this.rules.length);
  }
  push(rules: readonly Rule[]): void {
    for (const rule of rules) {
      if (rule.action === 'pass' && this.passAt < 0) this.passAt = this.starts.length;
      this.rules.push(rule);
    }
  }
  /** The starts, when a pass lies before the last tier. */
  breaks(): number[] | undefined {
    return this.passAt >= 0 && this.passAt < this.starts.length ? this.starts : undefined;
  }
}

/** The inputs of a side's lists that are not the pod itself. */
interface SideInputs {
  readonly plan: readonly TierSpec[];
  /** The tier selections in `plan`'s order (the default tier's: Calico's and Cilium's policies). */
  readonly selections: readonly TierSelection[];
  /** The pod's NetworkPolicy table for the direction, when one isolates it. */
  readonly networkPolicy: RuleTable | undefined;
  readonly allowNodeLocal: boolean;
  /**
   * Everything else the lists are made of, as text: the selections' keys (a changed policy is a
   * new object, with a new key) and what of the pod the rules read. Equal identities, equal lists.
   */
  readonly identity: string;
}

/** The side's lists, or undefined when no tier applies to the pod. */
export function tierLists(
  state: CompilingStore,
  pod: Endpoint,
  direction: Direction,
  inputs: SideInputs,
  policyRules: PolicyRules,
  ruleRules: RuleRules,
): { readonly table: TieredTable; readonly nodeAt?: number } | undefined {
  const admin = new ListBuilder();
  const baseline = new ListBuilder();
  let before = true;
  let inlined = false;
  let nodeAt: number | undefined;
  inputs.plan.forEach((tier, i) => {
    const policies = inputs.selections[i]?.policies ?? [];
    if (tier.name === DEFAULT_TIER) {
      before = false;
      if (policies.length === 0) return;
      inlined = true;
      admin.startTier();
      const own = defaultTierRules(pod, direction, policies, inputs, policyRules, ruleRules);
      if (own.nodeAt !== undefined) nodeAt = admin.rules.length + own.nodeAt;
      admin.push(own.rules);
      return;
    }
    if (policies.length === 0) return;
    const list = before ? admin : baseline;
    list.startTier();
    for (const policy of policies) list.push(policyRules(pod, policy, direction));
    if (tier.defaultAction === 'deny' && policies.some((p) => policyIsolates(p, direction)))
      list.push([denyAll(tierEndKey(tier.name))]);
  });
  if (admin.rules.length === 0 && baseline.rules.length === 0 && !inlined) return undefined;
  const adminBreaks = admin.breaks();
  const baselineBreaks = baseline.breaks();
  return {
    table: {
      // What the lists are made of names them (their text would cost as much as building them).
      id: hash(
        'sha256',
        `${inputs.identity}|${inputs.networkPolicy?.id ?? '-'}|${inputs.allowNodeLocal}`,
      ).slice(0, 16),
      admin: admin.rules,
      baseline: baseline.rules,
      ...(adminBreaks ? { adminBreaks } : {}),
      ...(baselineBreaks ? { baselineBreaks } : {}),
      ...(inlined ? { inlinesNetworkPolicy: true } : {}),
    },
    ...(nodeAt !== undefined ? { nodeAt } : {}),
  };
}

/**
 * The lists with the pod's own node's addresses permitted where NetworkPolicy's tier allows them
 * (`nodeAt` in `admin`): lists are built once for the pods that share them, and this is the one
 * part that depends on the pod's node.
 */
export function withNodePermits(
  state: CompilingStore,
  pod: Endpoint,
  direction: Direction,
  lists: TieredTable,
  nodeAt: number,
): TieredTable {
  const { rules: permits, text } = nodePermits(state, pod, direction);
  if (permits.length === 0) return lists;
  const shift = (starts: readonly number[] | undefined) =>
    starts?.map((start) => (start > nodeAt ? start + permits.length : start));
  const adminBreaks = shift(lists.adminBreaks);
  return {
    ...lists,
    id: hash('sha256', `${lists.id}|${nodeAt}|${text}`).slice(0, 16),
    admin: [...lists.admin.slice(0, nodeAt), ...permits, ...lists.admin.slice(nodeAt)],
    ...(adminBreaks ? { adminBreaks } : {}),
  };
}

/** NetworkPolicy's tier with Calico's or Cilium's policies in it, in the reference evaluator's order. */
function defaultTierRules(
  pod: Endpoint,
  direction: Direction,
  policies: readonly ClusterPolicy[],
  inputs: SideInputs,
  policyRules: PolicyRules,
  ruleRules: RuleRules,
): { rules: Rule[]; nodeAt?: number } {
  const calico = policies.filter((p) => policyEngine(p.kind) === 'calico');
  const cilium = policies.filter((p) => policyEngine(p.kind) === 'cilium');
  const np = inputs.networkPolicy;
  const isolated =
    np !== undefined ||
    calico.some((p) => policyIsolates(p, direction)) ||
    cilium.some((p) => policyIsolates(p, direction));
  const out: Rule[] = [];
  let nodeAt: number | undefined;
  // At order 1000, as default-tier.ts orders them: first Cilium's rules and the node (an empty
  // name: deny rules, the pod's own node — permitted by withNodePermits — then allow rules),
  // then the NetworkPolicies (`knp.default.`); Calico's policies by order and name around them
  // (the selection holds them in that order).
  const segment = (): void => {
    for (const policy of cilium)
      policy[direction].forEach((rule, at) => {
        if (rule.action === 'deny') pushAll(out, ruleRules(pod, policy, rule, at, direction));
      });
    if (isolated && inputs.allowNodeLocal) nodeAt = out.length;
    for (const policy of cilium)
      policy[direction].forEach((rule, at) => {
        if (rule.action === 'allow') pushAll(out, ruleRules(pod, policy, rule, at, direction));
      });
  };
  const networkPolicies = (): void => {
    if (np) pushAll(out, networkPolicyPermits(np));
  };
  const places = [
    { tie: '', place: segment },
    { tie: NETWORK_POLICIES_TIE, place: networkPolicies },
  ];
  let next = 0;
  for (const policy of sortedCalico(calico)) {
    while (
      next < places.length &&
      comesFirst(NETWORK_POLICY_ORDER, (places[next] as (typeof places)[0]).tie, policy)
    )
      (places[next++] as (typeof places)[0]).place();
    pushAll(out, policyRules(pod, policy, direction));
  }
  while (next < places.length) (places[next++] as (typeof places)[0]).place();
  if (isolated) out.push(denyAll(tierEndKey(DEFAULT_TIER)));
  return { rules: out, ...(nodeAt !== undefined ? { nodeAt } : {}) };
}

/** Calico's name for the NetworkPolicies' place among its own policies of order 1000. */
const NETWORK_POLICIES_TIE = 'knp.default.';

function pushAll(out: Rule[], rules: readonly Rule[]): void {
  for (const rule of rules) out.push(rule);
}

/** Whether (order, tie) sorts before the policy's (its order, then `calicoTieText`). */
function comesFirst(order: number, tie: string, policy: ClusterPolicy): boolean {
  if (order !== policy.priority) return order < policy.priority;
  return tie < tieOf(policy);
}

const ties = new WeakMap<ClusterPolicy, string>();
function tieOf(policy: ClusterPolicy): string {
  let tie = ties.get(policy);
  if (tie === undefined) ties.set(policy, (tie = calicoTieText(policy)));
  return tie;
}

/** Calico's policies by order and name (a selection is in that order already: then as is). */
function sortedCalico(policies: readonly ClusterPolicy[]): readonly ClusterPolicy[] {
  const before = (a: ClusterPolicy, b: ClusterPolicy): number =>
    a.priority !== b.priority
      ? a.priority < b.priority
        ? -1
        : 1
      : tieOf(a) < tieOf(b)
        ? -1
        : tieOf(a) > tieOf(b)
          ? 1
          : 0;
  for (let i = 1; i < policies.length; i++)
    if (before(policies[i - 1] as ClusterPolicy, policies[i] as ClusterPolicy) > 0)
      return [...policies].sort(before);
  return policies;
}

/** A NetworkPolicy table's permits, keyed for the tier (its last rule denies the rest: the tier's end does that here). */
const permitsMemo = new WeakMap<RuleTable, Rule[]>();
function networkPolicyPermits(table: RuleTable): Rule[] {
  let permits = permitsMemo.get(table);
  if (!permits)
    permitsMemo.set(
      table,
      (permits = table.rules
        .filter((rule) => rule.action === 'permit')
        .map((rule) => ({ ...rule, precedence: NETWORK_POLICY_KEY }))),
    );
  return permits;
}

/** A node's permits and their text, per direction. */
interface NodePermits {
  readonly rules: readonly Rule[];
  readonly text: string;
}
const NO_PERMITS: NodePermits = { rules: [], text: '' };

/**
 * Per list of nodes (the store gives one array per version of its nodes): each node by name, and
 * its permits once made. Every pod of a node has the same ones — 10,000 pods on 1,000 nodes
 * asked for them by scanning the list, and built them again, once per pod side.
 */
const permitsByNodes = new WeakMap<
  readonly NodeInfo[],
  { readonly byName: ReadonlyMap<string, NodeInfo>; readonly made: Map<string, NodePermits> }
>();

/** Permits for the pod's own node's addresses (NetworkPolicy always lets a pod talk with its node). */
function nodePermits(state: CompilingStore, pod: Endpoint, direction: Direction): NodePermits {
  if (pod.node === undefined) return NO_PERMITS;
  const nodes = state.nodes();
  let entry = permitsByNodes.get(nodes);
  if (!entry) {
    entry = { byName: new Map(nodes.map((n) => [n.name, n])), made: new Map() };
    permitsByNodes.set(nodes, entry);
  }
  const key = `${direction}|${pod.node}`;
  let permits = entry.made.get(key);
  if (!permits) {
    const rules = (entry.byName.get(pod.node)?.addresses ?? []).map((ip): Rule => {
      const net = { kind: 'cidr' as const, cidr: hostCidr(ip) };
      return {
        action: 'permit' as const,
        protocol: 'ANY' as const,
        src: direction === 'ingress' ? net : ANY_NET,
        dst: direction === 'egress' ? net : ANY_NET,
        precedence: NODE_KEY,
      };
    });
    permits = { rules, text: rules.map(ruleText).join('\n') };
    entry.made.set(key, permits);
  }
  return permits;
}

function denyAll(precedence: number): Rule {
  return { action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET, precedence };
}
