/**
 * Redundant NetworkPolicies and rules, in the sense of Network Config Analyzer: removing one
 * changes no connection. NetworkPolicy is a union per side (a side is isolated by any selecting
 * policy and allows what any of their rules allows), so a policy is redundant when, for every
 * endpoint it selects and every direction it affects, other policies still isolate the endpoint
 * and their rules already allow everything its rules allow; a rule, when the other rules
 * selecting the same endpoints allow everything it allows.
 *
 * Endpoints are checked per context — the same selecting policies, (ingress) the same named
 * ports, the same address families — since the answer depends on nothing else. Candidates are
 * checked latest first and each one found redundant is taken out before the next is checked, so
 * of two identical policies the later one is reported, and removing everything reported
 * together still changes nothing. A policy that selects every pod of its namespace and has no
 * rules (a namespace default-deny) is never reported: it guards the pods of tomorrow.
 */
import { policyKey, type Endpoint, type NetworkPolicy, type PolicyRule } from '../../model/types.ts';
import type { IpFamily } from '../../net/ip.ts';
import {
  DIRECTIONS,
  listSome,
  policyObject,
  rowsOf,
  type Direction,
  type LintCheck,
  type LintContext,
} from './context.ts';
import { covers, type CoverItem, type RuleRef } from './cover.ts';
import { networkPolicyItems } from './cover-items.ts';
import type { Finding, RelatedLocation } from './types.ts';

interface SubjectContext {
  readonly subject: Endpoint;
  readonly policies: readonly NetworkPolicy[];
  readonly families: readonly IpFamily[] | undefined;
}

export const redundancy: LintCheck = {
  codes: ['POLICY_REDUNDANT', 'RULE_REDUNDANT'],
  run(context) {
    const removedPolicies = new Set<NetworkPolicy>();
    const removedRules = new Set<PolicyRule>();
    const findings: Finding[] = [];
    const latestFirst = [...context.cluster.policies].reverse();
    for (const policy of latestFirst) {
      const result = policyRedundant(context, policy, removedPolicies, removedRules);
      if (!result) continue;
      removedPolicies.add(policy);
      findings.push(
        context.finding(
          'POLICY_REDUNDANT',
          `${policyKey(policy)} changes nothing: ${listSome(result.isolating)} also isolate${result.isolating.length === 1 ? 's' : ''} what it selects (${listSome(rowsOf(result.selected).labels)})${result.covering.length ? `, and ${listSome(result.covering.map((r) => r.label))} allow${result.covering.length === 1 ? 's' : ''} everything it allows` : ''}`,
          context.where(policyObject(policy), [], policy.location),
          related(context, result.covering),
        ),
      );
    }
    for (const policy of latestFirst) {
      if (removedPolicies.has(policy)) continue;
      for (const direction of affectedDirections(context, policy)) {
        for (const rule of [...policy[direction]].reverse()) {
          const covering = ruleRedundant(context, policy, direction, rule, removedPolicies, removedRules);
          if (!covering) continue;
          removedRules.add(rule);
          findings.push(
            context.finding(
              'RULE_REDUNDANT',
              `${policyKey(policy)} ${direction}[${rule.index}] allows nothing that ${listSome(covering.map((r) => r.label))} ${covering.length === 1 ? 'does' : 'do'} not already allow, for every endpoint it applies to`,
              context.where(policyObject(policy), ['spec', direction, rule.index], policy.location),
              related(context, covering),
            ),
          );
        }
      }
    }
    return findings;
  },
};

function affectedDirections(context: LintContext, policy: NetworkPolicy): Direction[] {
  if (context.semantics === 'v1beta1-proposal') return ['ingress'];
  return DIRECTIONS.filter((d) => (d === 'ingress' ? policy.affectsIngress : policy.affectsEgress));
}

/** The distinct contexts of the endpoints a policy selects, for one direction. */
function subjectContexts(
  context: LintContext,
  policy: NetworkPolicy,
  direction: Direction,
  removed: ReadonlySet<NetworkPolicy>,
  removedRules: ReadonlySet<PolicyRule>,
): SubjectContext[] {
  const byKey = new Map<string, SubjectContext>();
  for (const subject of context.selection(policy)) {
    const policies = context
      .policiesFor(subject, direction)
      .filter((p) => !removed.has(p) && stillIsolates(context, p, direction, removedRules));
    let key = '';
    for (const p of policies) key += `${context.policyId(p)},`;
    key += `\u0000${context.familiesKey(subject)}\u0000${direction === 'ingress' ? context.portsKey(subject) : ''}`;
    if (!byKey.has(key)) {
      const families = subject.ips.length
        ? [...new Set(subject.ips.map((ip) => ip.family))].sort()
        : undefined;
      byKey.set(key, { subject, policies, families });
    }
  }
  return [...byKey.values()];
}

/** A policy without explicit policyTypes stops isolating for egress once its egress rules are gone. */
function stillIsolates(
  context: LintContext,
  policy: NetworkPolicy,
  direction: Direction,
  removedRules: ReadonlySet<PolicyRule>,
): boolean {
  if (direction !== 'egress' || policy.policyTypesExplicit || context.semantics !== 'v1') return true;
  return policy.egress.some((r) => !removedRules.has(r));
}

function itemsOf(
  context: LintContext,
  policies: readonly NetworkPolicy[],
  direction: Direction,
  subject: Endpoint,
  removedRules: ReadonlySet<PolicyRule>,
  skip?: PolicyRule,
): CoverItem[] {
  return policies.flatMap((p) =>
    p[direction]
      .filter((r) => r !== skip && !removedRules.has(r))
      .flatMap((r) => networkPolicyItems(context, p, direction, r, subject)),
  );
}

function policyRedundant(
  context: LintContext,
  policy: NetworkPolicy,
  removedPolicies: ReadonlySet<NetworkPolicy>,
  removedRules: ReadonlySet<PolicyRule>,
): { selected: readonly Endpoint[]; isolating: string[]; covering: RuleRef[] } | undefined {
  const selected = context.selection(policy);
  const directions = affectedDirections(context, policy);
  if (selected.length === 0 || directions.length === 0) return undefined;
  if (policy.podSelector.requirements.length === 0 && directions.every((d) => policy[d].length === 0))
    return undefined;
  const isolating = new Set<string>();
  const covering = new Set<RuleRef>();
  let matchesSomething = false;
  for (const direction of directions) {
    for (const ctx of subjectContexts(context, policy, direction, removedPolicies, removedRules)) {
      const others = ctx.policies.filter((p) => p !== policy);
      // Under v1 the others must still isolate the endpoint; under the proposal the namespace does.
      if (context.semantics === 'v1' && others.length === 0) return undefined;
      for (const p of others) isolating.add(policyKey(p));
      const left = itemsOf(context, [policy], direction, ctx.subject, removedRules);
      const right = itemsOf(context, others, direction, ctx.subject, removedRules);
      const result = covers(left, right, context.endpoints, ctx.families);
      if (!result.contained) return undefined;
      if (!result.empty) matchesSomething = true;
      for (const r of result.covering) covering.add(r);
    }
  }
  // Rules that match nothing here are another check's finding (their peers or named ports).
  const hasRules = directions.some((d) => policy[d].length > 0);
  if (hasRules && !matchesSomething) return undefined;
  return { selected, isolating: [...isolating], covering: [...covering] };
}

function ruleRedundant(
  context: LintContext,
  policy: NetworkPolicy,
  direction: Direction,
  rule: PolicyRule,
  removedPolicies: ReadonlySet<NetworkPolicy>,
  removedRules: ReadonlySet<PolicyRule>,
): RuleRef[] | undefined {
  const contexts = subjectContexts(context, policy, direction, removedPolicies, removedRules);
  if (contexts.length === 0) return undefined;
  // Without explicit policyTypes, a policy isolates for egress because it has egress rules:
  // deleting its last one also ends that isolation, which other policies must then provide.
  const endsIsolation =
    direction === 'egress' &&
    context.semantics === 'v1' &&
    !policy.policyTypesExplicit &&
    policy.egress.every((r) => r === rule || removedRules.has(r));
  const covering = new Set<RuleRef>();
  let matchesSomething = false;
  for (const ctx of contexts) {
    if (endsIsolation && ctx.policies.every((p) => p === policy)) return undefined;
    const left = networkPolicyItems(context, policy, direction, rule, ctx.subject);
    const right = itemsOf(context, ctx.policies, direction, ctx.subject, removedRules, rule);
    const result = covers(left, right, context.endpoints, ctx.families);
    if (!result.contained) return undefined;
    if (!result.empty) matchesSomething = true;
    for (const r of result.covering) covering.add(r);
  }
  // A rule that allows nothing anywhere is another check's finding (a peer or named port matching nothing).
  return matchesSomething ? [...covering] : undefined;
}

function related(context: LintContext, rules: readonly RuleRef[]): RelatedLocation[] {
  return rules.slice(0, 10).map((r) => ({
    ...context.where(r.object, r.path, r.location),
    message: `covered by ${r.label}`,
  }));
}
