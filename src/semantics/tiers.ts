/**
 * One cluster-policy tier (Admin or Baseline) for one direction of one connection: the policies
 * selecting the endpoint, by precedence, each rule in order; the first rule whose peer and port
 * match decides — allow, deny, or pass (leave this tier). A fail-closed rule (a peer Palisade
 * cannot read) matches nothing when it allows and denies everything otherwise.
 */
import type { IpFamily } from '../net/ip.ts';
import { clusterPolicyLabel } from '../model/cluster-policy.ts';
import type { Endpoint, Tier } from '../model/types.ts';
import { matchingPeer, matchingPort, selectingClusterPolicies } from './cluster-match.ts';
import type { ClusterIndex } from './match.ts';
import type { Address, Connection, TierStep } from './types.ts';

export function walkTier(
  index: ClusterIndex,
  tier: Tier,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  connection: Connection,
  family: IpFamily | undefined,
): TierStep {
  const other: Address = direction === 'egress' ? connection.dst : connection.src;
  const policies = selectingClusterPolicies(index, endpoint, direction, tier);
  const names = policies.map(clusterPolicyLabel);
  for (const policy of policies) {
    for (const rule of policy[direction]) {
      const decided = (outcome: TierStep['outcome']): TierStep => ({
        tier,
        outcome,
        policy: clusterPolicyLabel(policy),
        rule: rule.index,
        ...(rule.name ? { ruleName: rule.name } : {}),
        policies: names,
      });
      if (rule.failClosed) {
        if (rule.action === 'allow') continue;
        return decided('deny');
      }
      if (matchingPeer(index, rule, endpoint, other, family) < 0) continue;
      if (matchingPort(rule, connection.dst, connection.protocol, connection.port) === -1) continue;
      return decided(rule.action);
    }
  }
  return { tier, outcome: 'no-match', policies: names };
}

/** `[Admin] pass (anp/monitoring, rule 2 "pass-probes")` — one step of a walk, for people. */
export function describeStep(step: TierStep): string {
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
