/**
 * Shadowed cluster policy rules. Within a tier the first matching rule decides, so a rule is dead
 * when, for every pod it applies to, the rules before it (of its own policy and of policies of
 * higher precedence selecting that pod) already match everything it matches — whatever their
 * action. A rule of a tier after NetworkPolicy's (Baseline, Calico's later tiers) is also dead for
 * pods that tier isolates in its direction: those are decided before the tier is reached.
 *
 * Every tier is checked: Calico's tiers (a policy shadowed by one of a lower order), and in
 * NetworkPolicy's tier Calico's policies by order with Cilium's rules at order 1000 — its deny
 * rules first, so an allow that a deny always wins over is dead. NetworkPolicy's own rules (also
 * at order 1000) are not counted as deciding first: a rule they shadow is not reported.
 *
 * Pods are checked per context — the same policies of the tier selecting them in precedence
 * order, the same namespace labels when a peer is relative to the subject's namespace, the same
 * named ports (ingress), the same address families — and each rule's cover items are built once
 * per context, so a tier of n rules costs n containment checks per context, not n².
 */
import {
  BASELINE_TIER,
  clusterPolicyLabel,
  DEFAULT_TIER,
  policyEngine,
  policyIsolates,
  type TierSpec,
} from '../../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, Endpoint } from '../../model/types.ts';
import type { IpFamily } from '../../net/ip.ts';
import {
  ciliumRules,
  defaultTierEntries,
  selectingClusterPolicies,
  tierPlan,
} from '../../semantics/index.ts';
import { DIRECTIONS, listSome, type Direction, type LintCheck, type LintContext } from './context.ts';
import { covers, type CoverItem, type RuleRef } from './cover.ts';
import { clusterRuleItems, clusterRuleRef } from './cover-items.ts';
import type { Finding } from './types.ts';

interface TierContext {
  readonly subject: Endpoint;
  /** The tier's rules for the subject, in the order they decide. */
  readonly rules: readonly { readonly policy: ClusterPolicy; readonly rule: ClusterRule }[];
  readonly families: readonly IpFamily[] | undefined;
  /** NetworkPolicy's tier isolates the subject in this direction (a tier after it never decides for it). */
  readonly isolated: boolean;
}

/** What is known about a rule so far. */
interface RuleState {
  readonly policy: ClusterPolicy;
  readonly rule: ClusterRule;
  live: boolean;
  matchesSomething: boolean;
  decidedByNetworkPolicy: boolean;
  /** The tier, when it comes after NetworkPolicy's and is not Baseline (for the message). */
  readonly later?: string;
  /** Rules that decide first, by label. */
  readonly shadowing: Map<string, { ref: RuleRef; action: ClusterRule['action'] }>;
}

export const shadowing: LintCheck = {
  codes: ['RULE_SHADOWED'],
  run(context) {
    const findings: Finding[] = [];
    const plan = tierPlan(context.cluster);
    const defaultAt = plan.findIndex((t) => t.name === DEFAULT_TIER);
    plan.forEach((tier, at) => {
      const after = at > defaultAt;
      for (const direction of DIRECTIONS) {
        const states = new Map<ClusterRule, RuleState>();
        for (const ctx of tierContexts(context, tier, after, direction))
          checkContext(
            context,
            ctx,
            direction,
            states,
            after && tier.name !== BASELINE_TIER ? tier.name : undefined,
          );
        for (const state of states.values()) {
          if (
            state.live ||
            state.rule.failClosed ||
            (!state.matchesSomething && !state.decidedByNetworkPolicy)
          )
            continue;
          findings.push(shadowFinding(context, state, direction));
        }
      }
    });
    return findings;
  },
};

function tierContexts(
  context: LintContext,
  tier: TierSpec,
  after: boolean,
  direction: Direction,
): TierContext[] {
  const policies = context.cluster.clusterPolicies.filter(
    (p) => p.tier === tier.name && p[direction].length > 0,
  );
  if (policies.length === 0) return [];
  const relative = policies.some((p) =>
    p[direction].some((r) => r.peers.some((peer) => peer.type === 'pods' && !peer.namespaces.selector)),
  );
  const subjects = new Set<Endpoint>();
  for (const policy of policies) for (const e of context.subjects(policy)) subjects.add(e);
  const byKey = new Map<string, TierContext>();
  for (const subject of subjects) {
    const selecting = selectingClusterPolicies(context.evaluation, subject, direction, tier.name);
    const isolated = after && defaultTierIsolates(context, subject, direction);
    const key = [
      selecting.map(clusterPolicyLabel).join(','),
      relative ? subject.namespace : '',
      direction === 'ingress' ? context.portsKey(subject) : '',
      context.familiesKey(subject),
      isolated ? 'I' : '',
    ].join('\u0000');
    if (!byKey.has(key)) {
      const families = subject.ips.length
        ? [...new Set(subject.ips.map((ip) => ip.family))].sort()
        : undefined;
      byKey.set(key, { subject, rules: orderedRules(tier, selecting, direction), families, isolated });
    }
  }
  return [...byKey.values()];
}

/** The tier's rules in the order they decide (NetworkPolicy's tier: Calico's by order, Cilium's deny rules first). */
function orderedRules(
  tier: TierSpec,
  policies: readonly ClusterPolicy[],
  direction: Direction,
): { policy: ClusterPolicy; rule: ClusterRule }[] {
  const all = (policy: ClusterPolicy) => policy[direction].map((rule) => ({ policy, rule }));
  if (tier.name !== DEFAULT_TIER) return policies.flatMap(all);
  const members = {
    calico: policies.filter((p) => policyEngine(p.kind) === 'calico'),
    cilium: policies.filter((p) => policyEngine(p.kind) === 'cilium'),
    networkPolicies: [],
  };
  return defaultTierEntries(members).flatMap((entry) =>
    entry.kind === 'calico'
      ? all(entry.policy)
      : entry.kind === 'segment'
        ? [...ciliumRules(members, direction, 'deny'), ...ciliumRules(members, direction, 'allow')]
        : [],
  );
}

/**
 * NetworkPolicy's tier decides everything for the subject in this direction: NetworkPolicy, or
 * Calico's or Cilium's there, hold it, and no rule there passes to a later tier.
 */
function defaultTierIsolates(context: LintContext, subject: Endpoint, direction: Direction): boolean {
  if (context.semantics === 'v1beta1-proposal')
    return (
      direction === 'ingress' &&
      context.cluster.namespaces.get(subject.namespace)?.legacyIngressIsolation === 'DefaultDeny'
    );
  const engines = selectingClusterPolicies(context.evaluation, subject, direction, DEFAULT_TIER);
  // A Pass there goes on to the later tiers: they are reached.
  if (engines.some((p) => p[direction].some((r) => r.action === 'pass'))) return false;
  return (
    context.policiesFor(subject, direction).length > 0 || engines.some((p) => policyIsolates(p, direction))
  );
}

function checkContext(
  context: LintContext,
  ctx: TierContext,
  direction: Direction,
  states: Map<ClusterRule, RuleState>,
  later: string | undefined,
): void {
  const earlier: { items: CoverItem[]; action: ClusterRule['action'] }[] = [];
  for (const { policy, rule } of ctx.rules) {
    let state = states.get(rule);
    if (!state) {
      state = {
        policy,
        rule,
        ...(later !== undefined ? { later } : {}),
        live: false,
        matchesSomething: false,
        decidedByNetworkPolicy: false,
        shadowing: new Map(),
      };
      states.set(rule, state);
    }
    const items = clusterRuleItems(context, policy, direction, rule, ctx.subject);
    if (ctx.isolated) state.decidedByNetworkPolicy = true;
    else if (!state.live && !rule.failClosed) {
      const right = earlier.flatMap((e) => e.items);
      const result = covers(items, right, context.endpoints, ctx.families);
      if (!result.contained) state.live = true;
      else {
        if (!result.empty) state.matchesSomething = true;
        for (const ref of result.covering) {
          const action = earlier.find((e) => e.items.some((i) => i.rule === ref))?.action;
          if (action) state.shadowing.set(ref.label, { ref, action });
        }
      }
    }
    // A Calico or Cilium rule Palisade cannot analyse (fail-closed) is not taken to shadow others.
    if (!rule.failClosed || policyEngine(policy.kind) === 'network-policy-api')
      earlier.push({ items, action: rule.action });
  }
}

function shadowFinding(context: LintContext, state: RuleState, direction: Direction): Finding {
  const ref = clusterRuleRef(state.policy, direction, state.rule);
  const shadows = [...state.shadowing.values()];
  const refs = shadows.map((s) => s.ref);
  const actions = new Set(shadows.map((s) => s.action));
  // Cilium: an allow that deny rules always win over.
  const denyWins =
    policyEngine(state.policy.kind) === 'cilium' &&
    state.rule.action === 'allow' &&
    actions.size === 1 &&
    actions.has('deny');
  const by = refs.length
    ? denyWins
      ? `deny wins: ${listSome(refs.map((r) => r.label))} ${refs.length === 1 ? 'denies' : 'deny'} everything it matches`
      : `${listSome(refs.map((r) => r.label))} ${
          actions.size === 1 && actions.has(state.rule.action)
            ? `already ${refs.length === 1 ? thirdPerson(state.rule.action) : state.rule.action} everything it matches`
            : `${refs.length === 1 ? 'decides' : 'decide'} everything it matches first`
        }`
    : '';
  const isolation = state.decidedByNetworkPolicy
    ? `${by ? '; ' : ''}NetworkPolicy${state.later !== undefined ? "'s tier" : ''} isolates ${by ? 'the other pods' : 'every pod'} it applies to, so the ${state.later !== undefined ? `tier ${state.later}` : 'Baseline tier'} is never reached`
    : '';
  return context.finding(
    'RULE_SHADOWED',
    `${ref.label} never decides: ${by}${isolation}`,
    context.where(ref.object, ref.path, ref.location),
    shadows.slice(0, 10).map(({ ref: r, action }) => ({
      ...context.where(r.object, r.path, r.location),
      message: `decides first: ${r.label} (${action})`,
    })),
  );
}

/** `allow` → `allows`, `deny` → `denies`, `pass` → `passes`: one rule's verb. */
function thirdPerson(action: string): string {
  if (action.endsWith('y')) return `${action.slice(0, -1)}ies`;
  return action.endsWith('s') ? `${action}es` : `${action}s`;
}
