/**
 * Cilium policies that only deny, yet isolate. Cilium puts the endpoints a policy selects in
 * default deny for each direction it has rules for — deny rules too — unless `enableDefaultDeny`
 * is false for it (docs.cilium.io, security/policy/language, "Deny policies": pair a deny policy
 * with an allow-all, or turn its default deny off). A policy written to block some traffic then
 * blocks everything else as well. That changes something only for endpoints nothing else isolates
 * in the direction — a NetworkPolicy, a Calico policy of the default tier, a Cilium policy with
 * allow rules or default deny on purpose: for the others the deny rules do just what they say, so
 * the finding names only the endpoints the deny-only policy alone isolates.
 */
import {
  clusterPolicyLabel,
  DEFAULT_TIER,
  policyEngine,
  policyIsolates,
} from '../../model/cluster-policy.ts';
import type { ClusterPolicy, Endpoint } from '../../model/types.ts';
import { selectingClusterPolicies } from '../../semantics/index.ts';
import {
  clusterPolicyObject,
  DIRECTIONS,
  listSome,
  rowsOf,
  type Direction,
  type LintCheck,
  type LintContext,
} from './context.ts';
import type { Finding } from './types.ts';

export const denyOnlyIsolation: LintCheck = {
  codes: ['DENY_POLICY_ISOLATES'],
  run(context) {
    const findings: Finding[] = [];
    // Under the proposal's semantics the evaluator leaves Cilium's policies out (semantics/evaluate.ts).
    if (context.semantics !== 'v1') return findings;
    for (const policy of context.cluster.clusterPolicies)
      for (const direction of DIRECTIONS) {
        if (!isDenyOnly(policy, direction) || !policyIsolates(policy, direction)) continue;
        const alone = context
          .subjects(policy)
          .filter((e) => !isolatedElsewhere(context, policy, e, direction));
        if (alone.length === 0) continue;
        findings.push(denyOnlyFinding(context, policy, direction, alone));
      }
    return findings;
  },
};

/** A Cilium policy whose rules for the direction all deny. */
function isDenyOnly(policy: ClusterPolicy, direction: Direction): boolean {
  return (
    policyEngine(policy.kind) === 'cilium' &&
    policy[direction].length > 0 &&
    policy[direction].every((rule) => rule.action === 'deny')
  );
}

/** Whether a policy other than a deny-only Cilium one holds the endpoint in NetworkPolicy's tier. */
function isolatedElsewhere(
  context: LintContext,
  policy: ClusterPolicy,
  endpoint: Endpoint,
  direction: Direction,
): boolean {
  if (context.policiesFor(endpoint, direction).length > 0) return true;
  return selectingClusterPolicies(context.evaluation, endpoint, direction, DEFAULT_TIER).some(
    (other) => other !== policy && policyIsolates(other, direction) && !isDenyOnly(other, direction),
  );
}

function denyOnlyFinding(
  context: LintContext,
  policy: ClusterPolicy,
  direction: Direction,
  alone: readonly Endpoint[],
): Finding {
  const field = `${direction}Deny`;
  const rows = rowsOf(alone);
  const traffic = direction === 'ingress' ? 'connection to them' : 'connection from them';
  const entity = direction === 'ingress' ? 'fromEntities' : 'toEntities';
  return context.finding(
    'DENY_POLICY_ISOLATES',
    `${clusterPolicyLabel(policy)} has only ${field} rules, yet it puts the endpoints it selects in default deny for ${direction} (enableDefaultDeny.${direction} is not false), and nothing else isolates ${listSome(rows.labels, 3, rows.count)}: every ${direction} ${traffic} that no rule allows is denied, not only what its rules deny`,
    context.where(clusterPolicyObject(policy), [...(policy.specPath ?? ['spec']), field], policy.location),
    [],
    `add an ${direction} allow rule for what should still pass (e.g. ${entity}: [all] — its deny rules still win), or set enableDefaultDeny.${direction}: false`,
  );
}
