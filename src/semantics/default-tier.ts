/**
 * The tier NetworkPolicy sits in, when Calico's default-tier policies or Cilium's policies select
 * the pod as well. Calico puts each Kubernetes NetworkPolicy in its default tier as a policy of
 * order 1000 (`knp.default.<name>`), among its own default-tier policies sorted by order and then
 * by name; Palisade keeps a pod's NetworkPolicies together there, as one entry named
 * `knp.default.` (they only allow, so their own order changes nothing; a Calico policy of order
 * 1000 whose name sorts among theirs is placed after them). The tier applies to a pod any of them selects, its first matching
 * rule decides (allow, deny, or pass: on to the next tier), and a pod it applies to is denied what
 * no rule matched. Cilium's rules sit at the same place as NetworkPolicy's (order 1000, before the
 * NetworkPolicies): every deny rule first — deny wins, whichever policy it is in — then the allow
 * rules of Cilium's policies and NetworkPolicy's together; a pod is held to the tier when a
 * policy with default deny selects it (a Cilium policy with `enableDefaultDeny: false` adds rules
 * without isolating). Traffic between a pod and its own node is allowed at that place, after
 * Cilium's deny rules, as NetworkPolicy always allows it.
 *
 * Each function here answers for one side; `evaluate.ts` (the explained verdict and `isAllowed`)
 * and `allowed-ports.ts` (port sets) call them when `defaultTierMembers` finds such policies, and
 * keep NetworkPolicy's own tier as it always was otherwise.
 */
import type { IpFamily } from '../net/ip.ts';
import {
  clusterPolicyLabel,
  clusterRuleLabel,
  DEFAULT_TIER,
  NETWORK_POLICY_ORDER,
  policyEngine,
  policyIsolates,
} from '../model/cluster-policy.ts';
import { calicoTieText } from '../model/precedence.ts';
import type { ClusterPolicy, ClusterRule, Endpoint, NetworkPolicy, Semantics } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { describeAddress, describeClusterRule } from './describe.ts';
import { noteExplanation } from './explanation-meter.ts';
import { matchingPeer, matchingPort, selectingClusterPolicies } from './cluster-match.ts';
import { isOwnNode, selectingPolicies, type ClusterIndex } from './match.ts';
import { checkPolicy, policyAllows } from './np-rules.ts';
import type { Connection, EvaluateOptions, RuleMatch, RuleMiss, SideStatus, TierStep } from './types.ts';

/** Calico's and Cilium's policies selecting the pod in the default tier (NetworkPolicies apart). */
export interface DefaultTierMembers {
  /** In Calico's order. */
  readonly calico: readonly ClusterPolicy[];
  readonly cilium: readonly ClusterPolicy[];
  readonly networkPolicies: readonly NetworkPolicy[];
}

/** The members, or undefined when nothing but NetworkPolicy can select the pod there. */
export function defaultTierMembers(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  semantics: Semantics,
): DefaultTierMembers | undefined {
  const others = selectingClusterPolicies(index, endpoint, direction, DEFAULT_TIER);
  if (others.length === 0) return undefined;
  const networkPolicies = selectingPolicies(index, endpoint, direction, semantics);
  // Selections are memoized arrays: pods selected alike share one members object (and its lists).
  let byPolicies = membersMemo.get(others);
  if (!byPolicies) membersMemo.set(others, (byPolicies = new WeakMap()));
  let members = byPolicies.get(networkPolicies);
  if (!members) {
    members = {
      calico: others.filter((p) => policyEngine(p.kind) === 'calico'),
      cilium: others.filter((p) => policyEngine(p.kind) === 'cilium'),
      networkPolicies,
    };
    byPolicies.set(networkPolicies, members);
  }
  return members;
}

const membersMemo = new WeakMap<
  readonly ClusterPolicy[],
  WeakMap<readonly NetworkPolicy[], DefaultTierMembers>
>();
const entriesMemo = new WeakMap<DefaultTierMembers, DefaultTierEntry[]>();
/** Per members, direction and action: the matrix asks for them per pair (no key is built). */
type CiliumRules = { policy: ClusterPolicy; rule: ClusterRule }[];
const ciliumMemo = new WeakMap<
  DefaultTierMembers,
  Partial<Record<'ingress' | 'egress', Partial<Record<'allow' | 'deny', CiliumRules>>>>
>();
const isolatesMemo = new WeakMap<DefaultTierMembers, Partial<Record<'ingress' | 'egress', boolean>>>();

/** One place in the tier's order: a Calico policy, the NetworkPolicies, or Cilium's rules (and the node). */
type DefaultTierEntry =
  | { readonly kind: 'calico'; readonly policy: ClusterPolicy }
  | { readonly kind: 'networkPolicies'; readonly policies: readonly NetworkPolicy[] }
  | { readonly kind: 'segment' };

/** Where the NetworkPolicies' entry sorts among policies of order 1000 (Calico's `knp.default.` names). */
const NETWORK_POLICIES_TIE = 'knp.default.';

/** The tier's entries in the order Calico evaluates them (see the header). */
export function defaultTierEntries(members: DefaultTierMembers): DefaultTierEntry[] {
  let entries = entriesMemo.get(members);
  if (!entries) entriesMemo.set(members, (entries = sortedEntries(members)));
  return entries;
}

function sortedEntries(members: DefaultTierMembers): DefaultTierEntry[] {
  const keyed: { order: number; tie: string; entry: DefaultTierEntry }[] = [
    ...members.calico.map((policy) => ({
      order: policy.priority,
      tie: calicoTieText(policy),
      entry: { kind: 'calico' as const, policy },
    })),
    ...(members.networkPolicies.length > 0
      ? [
          {
            order: NETWORK_POLICY_ORDER,
            tie: NETWORK_POLICIES_TIE,
            entry: { kind: 'networkPolicies' as const, policies: members.networkPolicies },
          },
        ]
      : []),
    // Cilium's rules and the node: first among order 1000 (an empty tie sorts first).
    { order: NETWORK_POLICY_ORDER, tie: '', entry: { kind: 'segment' as const } },
  ];
  keyed.sort((a, b) =>
    a.order !== b.order ? (a.order < b.order ? -1 : 1) : a.tie < b.tie ? -1 : a.tie > b.tie ? 1 : 0,
  );
  return keyed.map((k) => k.entry);
}

/** Whether the tier holds the pod for the direction (its default action, deny, then applies). */
export function defaultTierIsolates(members: DefaultTierMembers, direction: 'ingress' | 'egress'): boolean {
  let known = isolatesMemo.get(members);
  if (!known) isolatesMemo.set(members, (known = {}));
  return (known[direction] ??=
    members.networkPolicies.length > 0 ||
    members.calico.some((p) => policyIsolates(p, direction)) ||
    members.cilium.some((p) => policyIsolates(p, direction)));
}

/** Cilium's rules of one action, with their policies. */
export function ciliumRules(
  members: DefaultTierMembers,
  direction: 'ingress' | 'egress',
  action: 'allow' | 'deny',
): CiliumRules {
  let byDirection = ciliumMemo.get(members);
  if (!byDirection) ciliumMemo.set(members, (byDirection = {}));
  const byAction = (byDirection[direction] ??= {});
  return (byAction[action] ??= members.cilium.flatMap((policy) =>
    policy[direction].filter((rule) => rule.action === action).map((rule) => ({ policy, rule })),
  ));
}

/** What a rule does to this connection: undefined when it does not match. */
function ruleOutcome(
  index: ClusterIndex,
  rule: ClusterRule,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): ClusterRule['action'] | undefined {
  const other = direction === 'egress' ? connection.dst : connection.src;
  if (rule.failClosed) return rule.action === 'allow' ? undefined : 'deny';
  // Both must match: the port first, as NetworkPolicy's rules do — it is the cheaper question.
  if (matchingPort(rule, connection.dst, connection.protocol, connection.port) === -1) return undefined;
  if (matchingPeer(index, rule, endpoint, other, family) < 0) return undefined;
  return rule.action;
}

/** What `defaultTierOutcome` reads of the members for one direction, found once (semantics/side-plan.ts). */
export interface DefaultTierSide {
  readonly entries: readonly DefaultTierEntry[];
  readonly isolated: boolean;
  readonly deny: readonly { readonly rule: ClusterRule }[];
  readonly allow: readonly { readonly rule: ClusterRule }[];
}

export function defaultTierSide(
  members: DefaultTierMembers,
  direction: 'ingress' | 'egress',
): DefaultTierSide {
  return {
    entries: defaultTierEntries(members),
    isolated: defaultTierIsolates(members, direction),
    deny: ciliumRules(members, direction, 'deny'),
    allow: ciliumRules(members, direction, 'allow'),
  };
}

/** The tier's answer alone: allow, deny, or continue (passed, or not held). */
export function defaultTierOutcome(
  index: ClusterIndex,
  side: DefaultTierSide,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
  options: EvaluateOptions,
): 'allow' | 'deny' | 'continue' {
  const semantics: Semantics = options.semantics ?? 'v1';
  const other = direction === 'egress' ? connection.dst : connection.src;
  const { isolated } = side;
  for (const entry of side.entries) {
    if (entry.kind === 'calico') {
      for (const rule of entry.policy[direction]) {
        const outcome = ruleOutcome(index, rule, endpoint, direction, connection, family);
        if (outcome) return outcome === 'pass' ? 'continue' : outcome;
      }
    } else if (entry.kind === 'networkPolicies') {
      for (const policy of entry.policies)
        if (policyAllows(index, policy, connection, direction, other, family, semantics)) return 'allow';
    } else {
      for (const { rule } of side.deny)
        if (ruleOutcome(index, rule, endpoint, direction, connection, family)) return 'deny';
      if (isolated && (options.allowNodeLocal ?? true) && isOwnNode(index, endpoint, other)) return 'allow';
      for (const { rule } of side.allow)
        if (ruleOutcome(index, rule, endpoint, direction, connection, family)) return 'allow';
    }
  }
  return isolated ? 'deny' : 'continue';
}

/** The tier's explained answer: a decision (with what a side verdict says), or the step to go on. */
type DefaultTierResult =
  | {
      readonly decided: true;
      readonly allowed: boolean;
      readonly status: SideStatus;
      readonly reason: string;
      readonly step: TierStep;
      readonly policies: readonly string[];
      readonly matches: readonly RuleMatch[];
      readonly misses: readonly RuleMiss[];
    }
  | { readonly decided: false; readonly step: TierStep };

export function walkDefaultTier(
  index: ClusterIndex,
  members: DefaultTierMembers,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
  options: EvaluateOptions,
): DefaultTierResult {
  noteExplanation();
  const semantics: Semantics = options.semantics ?? 'v1';
  const other = direction === 'egress' ? connection.dst : connection.src;
  const isolated = defaultTierIsolates(members, direction);
  const names = [
    ...members.calico.map(clusterPolicyLabel),
    ...members.cilium.map(clusterPolicyLabel),
    ...members.networkPolicies.map(policyKey),
  ];
  const misses: RuleMiss[] = [];
  const on = `${describeAddress(other)} on ${connection.protocol}/${connection.port}`;
  const tier = { tier: DEFAULT_TIER, ...shownAs(members) };
  const ruleDecides = (
    policy: ClusterPolicy,
    rule: ClusterRule,
    action: ClusterRule['action'],
  ): DefaultTierResult | undefined => {
    const label = clusterRuleLabel(rule, direction);
    const name = clusterPolicyLabel(policy);
    const calico = policyEngine(policy.kind) === 'calico';
    const order = calico && Number.isFinite(policy.priority) ? { order: policy.priority } : {};
    const step: TierStep = {
      ...tier,
      outcome: action,
      policy: name,
      rule: rule.index,
      ruleLabel: label,
      ...order,
      policies: names,
    };
    if (action === 'pass') return { decided: false, step };
    const where = calico ? ` (default tier${'order' in order ? `, order ${policy.priority}` : ''})` : '';
    const allowed = action === 'allow';
    return {
      decided: true,
      allowed,
      status: allowed ? 'allowed-by-rule' : 'denied-by-rule',
      reason: `${allowed ? 'allowed' : 'denied'} by ${name} ${label}${where}${allowed ? '' : ` for ${on}`}`,
      step,
      policies: names,
      matches: allowed ? [{ policy: name, rule: rule.index, ...(rule.field ? { label } : {}) }] : [],
      misses,
    };
  };
  const missed = (policy: ClusterPolicy, rule: ClusterRule): void => {
    misses.push({
      policy: clusterPolicyLabel(policy),
      rule: rule.index,
      ...(rule.field ? { label: clusterRuleLabel(rule, direction) } : {}),
      reason: `${describeAddress(other)} on ${connection.protocol}/${connection.port} does not match (rule: ${describeClusterRule(rule, direction)})`,
    });
  };
  for (const entry of defaultTierEntries(members)) {
    if (entry.kind === 'calico') {
      const policy = entry.policy;
      if (policy[direction].length === 0) {
        misses.push({
          policy: clusterPolicyLabel(policy),
          rule: -1,
          reason: `no ${direction} rules; it only isolates`,
        });
      }
      for (const rule of policy[direction]) {
        const outcome = ruleOutcome(index, rule, endpoint, direction, connection, family);
        if (!outcome) {
          missed(policy, rule);
          continue;
        }
        const decided = ruleDecides(policy, rule, outcome);
        if (decided) return decided;
      }
    } else if (entry.kind === 'networkPolicies') {
      const matches: RuleMatch[] = [];
      for (const policy of entry.policies)
        checkPolicy(index, policy, connection, direction, other, family, semantics, matches, misses);
      const first = matches[0];
      if (first)
        return {
          decided: true,
          allowed: true,
          status: 'allowed-by-rule',
          reason: `allowed by ${first.policy} ${direction}[${first.rule}]`,
          step: {
            ...tier,
            outcome: 'allow',
            policy: first.policy,
            rule: first.rule,
            ruleLabel: `${direction}[${first.rule}]`,
            policies: names,
          },
          policies: names,
          matches,
          misses,
        };
    } else {
      for (const { policy, rule } of ciliumRules(members, direction, 'deny')) {
        if (ruleOutcome(index, rule, endpoint, direction, connection, family))
          return ruleDecides(policy, rule, 'deny') as DefaultTierResult;
        missed(policy, rule);
      }
      if (isolated && (options.allowNodeLocal ?? true) && isOwnNode(index, endpoint, other))
        return {
          decided: true,
          allowed: true,
          status: 'node-local',
          reason: `traffic between ${endpoint.id} and its own node is always allowed`,
          step: { ...tier, outcome: 'allow', policies: names },
          policies: names,
          matches: [],
          misses: [],
        };
      for (const { policy, rule } of ciliumRules(members, direction, 'allow')) {
        if (ruleOutcome(index, rule, endpoint, direction, connection, family))
          return ruleDecides(policy, rule, 'allow') as DefaultTierResult;
        missed(policy, rule);
      }
    }
  }
  if (!isolated) return { decided: false, step: { ...tier, outcome: 'not-isolated', policies: names } };
  const holding = [
    ...members.calico.filter((p) => policyIsolates(p, direction)).map(clusterPolicyLabel),
    ...members.cilium.filter((p) => policyIsolates(p, direction)).map(clusterPolicyLabel),
    ...members.networkPolicies.map(policyKey),
  ];
  return {
    decided: true,
    allowed: false,
    status: 'no-rule-matched',
    reason: `${endpoint.id} is isolated for ${direction} by ${holding.join(', ')}, and no rule allows ${on}`,
    // The end of the tier is what the isolating policies hold to: a Cilium policy whose default
    // deny is off selects the pod but holds it to nothing.
    step: { ...tier, outcome: 'deny', endOfTier: true, policies: holding },
    policies: names,
    matches: [],
    misses,
  };
}

/**
 * How a walk names NetworkPolicy's place to people when no Calico policy is in it: Cilium has no
 * tiers, so "the default tier" would be Calico's word for a Cilium answer — and Cilium enforces
 * the NetworkPolicies there as its own.
 */
function shownAs(members: DefaultTierMembers): { shownAs?: string } {
  return members.calico.length > 0 ? {} : { shownAs: 'Cilium' };
}
