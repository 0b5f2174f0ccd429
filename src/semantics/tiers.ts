/**
 * One tier for one direction of one connection — Admin, Baseline, one of Calico's, or Calico's
 * profiles: the policies selecting the endpoint, by precedence, each rule in order; the first
 * rule whose peer and port match decides — allow, deny, or pass (leave this tier). A fail-closed
 * rule (a peer Palisade cannot read) matches nothing when it allows and denies everything
 * otherwise. When no rule matches, a tier whose default action is deny (Calico's) denies if one
 * of its policies holds the endpoint to it (Calico's `types`); otherwise the walk goes on.
 */
import type { IpFamily } from '../net/ip.ts';
import {
  ADMIN_TIER,
  BASELINE_TIER,
  PROFILES_TIER,
  clusterPolicyLabel,
  clusterRuleLabel,
  policyEngine,
  policyIsolates,
  type PolicyEngine,
  type TierSpec,
} from '../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, Endpoint } from '../model/types.ts';
import { matchingPeer, matchingPort, selectingClusterPolicies } from './cluster-match.ts';
import type { ClusterIndex } from './match.ts';
import { AFTER_EVERY_TIER, type Address, type Connection, type TierStep } from './types.ts';
import { noteExplanation } from './explanation-meter.ts';

/**
 * The step of one tier, or undefined for a Calico tier no policy of which selects the endpoint
 * (Calico skips it; Admin and Baseline are always shown, as before Calico's tiers existed).
 */
export function walkTier(
  index: ClusterIndex,
  tier: TierSpec,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): TierStep | undefined {
  noteExplanation();
  const policies = selectingClusterPolicies(index, endpoint, direction, tier.name);
  // Admin and Baseline are shown without policies selecting the endpoint as they always were —
  // unless Calico's or Cilium's policies are in the input, whose walks show only the tiers that apply.
  // Only when the input has a policy in the tier: "[Admin] no policy" says nothing otherwise.
  const shownEmpty =
    (tier.name === ADMIN_TIER || tier.name === BASELINE_TIER) &&
    !hasEnginePolicies(index) &&
    tiersPresent(index).has(tier.name);
  if (policies.length === 0 && !shownEmpty) return undefined;
  const names = policies.map(clusterPolicyLabel);
  const decided = decidingRule(index, policies, endpoint, direction, connection, family);
  if (!decided) {
    return tierHolds(tier, policies, direction)
      ? { tier: tier.name, outcome: 'deny', endOfTier: true, policies: names }
      : { tier: tier.name, outcome: 'no-match', policies: names };
  }
  const { policy, rule } = decided;
  return {
    tier: tier.name,
    outcome: rule.failClosed ? 'deny' : rule.action,
    policy: clusterPolicyLabel(policy),
    rule: rule.index,
    ...(rule.name ? { ruleName: rule.name } : {}),
    ...(rule.field || policyEngine(policy.kind) !== 'network-policy-api'
      ? { ruleLabel: clusterRuleLabel(rule, direction) }
      : {}),
    // Profiles have no order: Calico applies an endpoint's profiles after every tier.
    ...(policyEngine(policy.kind) === 'calico' &&
    tier.name !== PROFILES_TIER &&
    Number.isFinite(policy.priority)
      ? { order: policy.priority }
      : {}),
    policies: names,
  };
}

const present = new WeakMap<object, ReadonlySet<string>>();

/** The tiers the input has a policy in. */
function tiersPresent(index: ClusterIndex): ReadonlySet<string> {
  let found = present.get(index.cluster);
  if (!found) present.set(index.cluster, (found = new Set(index.cluster.clusterPolicies.map((p) => p.tier))));
  return found;
}

const engines = new WeakMap<object, ReadonlySet<PolicyEngine>>();

/** The engines whose policies the input holds (read once per cluster). */
function enginesPresent(index: ClusterIndex): ReadonlySet<PolicyEngine> {
  let found = engines.get(index.cluster);
  if (!found)
    engines.set(
      index.cluster,
      (found = new Set(index.cluster.clusterPolicies.map((p) => policyEngine(p.kind)))),
    );
  return found;
}

/** Whether the input holds Calico's policies: NetworkPolicy's place is then Calico's default tier. */
export function hasCalicoPolicies(index: ClusterIndex): boolean {
  return enginesPresent(index).has('calico');
}

/** Whether the input holds Calico's or Cilium's policies. */
function hasEnginePolicies(index: ClusterIndex): boolean {
  const found = enginesPresent(index);
  return found.has('calico') || found.has('cilium');
}

/** Whether the tier's default action denies what none of its rules decided, for these policies. */
export function tierHolds(
  tier: TierSpec,
  policies: readonly ClusterPolicy[],
  direction: 'ingress' | 'egress',
): boolean {
  return tier.defaultAction === 'deny' && policies.some((p) => policyIsolates(p, direction));
}

/**
 * The tier's outcome alone (what `walkTier` decides, without naming anything), for the policies
 * of the tier that select the endpoint (semantics/side-plan.ts): for verdicts nobody reads.
 */
export function tierPoliciesOutcome(
  index: ClusterIndex,
  tier: TierSpec,
  policies: readonly ClusterPolicy[],
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): TierStep['outcome'] {
  if (policies.length === 0) return 'no-match';
  const decided = decidingRule(index, policies, endpoint, direction, connection, family);
  if (!decided) return tierHolds(tier, policies, direction) ? 'deny' : 'no-match';
  return decided.rule.failClosed ? 'deny' : decided.rule.action;
}

/** The first rule, by precedence and rule order, whose peer and port match; a fail-closed Deny or Pass matches all. */
function decidingRule(
  index: ClusterIndex,
  policies: readonly ClusterPolicy[],
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): { policy: ClusterPolicy; rule: ClusterRule } | undefined {
  const other: Address = direction === 'egress' ? connection.dst : connection.src;
  for (const policy of policies) {
    for (const rule of policy[direction]) {
      if (rule.failClosed) {
        if (rule.action === 'allow') continue;
        return { policy, rule };
      }
      // Both must match: the port first, the cheaper question.
      if (matchingPort(rule, connection.dst, connection.protocol, connection.port) === -1) continue;
      if (matchingPeer(index, rule, endpoint, other, family) < 0) continue;
      return { policy, rule };
    }
  }
  return undefined;
}

/** `[Admin] pass (anp/monitoring, rule 2 "pass-probes")` — one step of a walk, for people. */
export function describeStep(step: TierStep): string {
  noteExplanation();
  const words: Record<TierStep['outcome'], string> = {
    allow: 'allowed',
    deny: 'denied',
    pass: 'pass',
    'no-match': 'no rule matched',
    'not-isolated': 'not isolated',
  };
  // A NetworkPolicy denial has no deciding rule: name the isolating policies instead.
  const rule =
    step.ruleLabel !== undefined
      ? `, ${step.ruleLabel}`
      : step.rule !== undefined
        ? `, rule ${step.rule}${step.ruleName ? ` "${step.ruleName}"` : ''}`
        : '';
  const order = step.order !== undefined ? `, order ${step.order}` : '';
  const by =
    step.policy !== undefined
      ? ` (${step.policy}${order}${rule})`
      : step.outcome === 'deny' && step.policies.length > 0
        ? ` (${step.endOfTier ? (step.shownAs ? 'default deny: ' : 'end of tier: ') : ''}${step.policies.join(', ')})`
        : '';
  // Past the last tier nothing decided: the walk ends allowed, and no tier is to be named.
  if (step.tier === AFTER_EVERY_TIER) return `${words[step.outcome]} (${step.shownAs ?? 'no tier decided'})`;
  const none = step.outcome === 'no-match' && step.policies.length === 0 ? 'no policy' : words[step.outcome];
  return `[${step.shownAs ?? step.tier}] ${none}${by}`;
}
