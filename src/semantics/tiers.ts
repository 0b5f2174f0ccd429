/**
 * One cluster-policy tier (Admin or Baseline) for one direction of one connection: the policies
 * selecting the endpoint, by precedence, each rule in order; the first rule whose peer and port
 * match decides — allow, deny, or pass (leave this tier). A fail-closed rule (a peer Palisade
 * cannot read) matches nothing when it allows and denies everything otherwise.
 */
import type { IpFamily } from '../net/ip.ts';
import { clusterPolicyLabel } from '../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, Endpoint, Tier } from '../model/types.ts';
import { matchingPeer, matchingPort, selectingClusterPolicies } from './cluster-match.ts';
import type { ClusterIndex } from './match.ts';
import type { Address, Connection, TierStep } from './types.ts';
import { noteExplanation } from './explanation-meter.ts';

export function walkTier(
  index: ClusterIndex,
  tier: Tier,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): TierStep {
  noteExplanation();
  const policies = selectingClusterPolicies(index, endpoint, direction, tier);
  const names = policies.map(clusterPolicyLabel);
  const decided = decidingRule(index, policies, endpoint, direction, connection, family);
  if (!decided) return { tier, outcome: 'no-match', policies: names };
  const { policy, rule } = decided;
  return {
    tier,
    outcome: rule.failClosed ? 'deny' : rule.action,
    policy: clusterPolicyLabel(policy),
    rule: rule.index,
    ...(rule.name ? { ruleName: rule.name } : {}),
    policies: names,
  };
}

/** The tier's outcome alone (what `walkTier` decides, without naming anything): for verdicts nobody reads. */
export function tierOutcome(
  index: ClusterIndex,
  tier: Tier,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): TierStep['outcome'] {
  const policies = selectingClusterPolicies(index, endpoint, direction, tier);
  if (policies.length === 0) return 'no-match';
  const decided = decidingRule(index, policies, endpoint, direction, connection, family);
  if (!decided) return 'no-match';
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
      if (matchingPeer(index, rule, endpoint, other, family) < 0) continue;
      if (matchingPort(rule, connection.dst, connection.protocol, connection.port) === -1) continue;
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
  const by =
    step.policy !== undefined
      ? ` (${step.policy}${step.rule !== undefined ? `, rule ${step.rule}${step.ruleName ? ` "${step.ruleName}"` : ''}` : ''})`
      : step.outcome === 'deny' && step.policies.length > 0
        ? ` (${step.policies.join(', ')})`
        : '';
  const none = step.outcome === 'no-match' && step.policies.length === 0 ? 'no policy' : words[step.outcome];
  return `[${step.tier}] ${none}${by}`;
}
