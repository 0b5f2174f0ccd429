/**
 * Shadowed cluster policy rules. Within a tier the first matching rule decides, so a rule is dead
 * when, for every pod it applies to, the rules before it (of its own policy and of policies of
 * higher precedence selecting that pod) already match everything it matches — whatever their
 * action. A Baseline rule is also dead for pods NetworkPolicy isolates in its direction: those
 * are decided before the Baseline tier is reached.
 *
 * Pods are checked per context — the same policies of the tier selecting them in precedence
 * order, the same namespace labels when a peer is relative to the subject's namespace, the same
 * named ports (ingress), the same address families — and each rule's cover items are built once
 * per context, so a tier of n rules costs n containment checks per context, not n².
 */
import { clusterPolicyLabel } from '../../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, Endpoint, Tier } from '../../model/types.ts';
import type { IpFamily } from '../../net/ip.ts';
import { selectingClusterPolicies } from '../../semantics/index.ts';
import { DIRECTIONS, listSome, type Direction, type LintCheck, type LintContext } from './context.ts';
import { covers, type CoverItem, type RuleRef } from './cover.ts';
import { clusterRuleItems, clusterRuleRef } from './cover-items.ts';
import type { Finding } from './types.ts';

interface TierContext {
  readonly subject: Endpoint;
  readonly policies: readonly ClusterPolicy[];
  readonly families: readonly IpFamily[] | undefined;
  /** NetworkPolicy isolates the subject in this direction (the Baseline tier never decides for it). */
  readonly isolated: boolean;
}

/** What is known about a rule so far. */
interface RuleState {
  readonly policy: ClusterPolicy;
  readonly rule: ClusterRule;
  live: boolean;
  matchesSomething: boolean;
  decidedByNetworkPolicy: boolean;
  /** Rules that decide first, by label. */
  readonly shadowing: Map<string, { ref: RuleRef; action: ClusterRule['action'] }>;
}

export const shadowing: LintCheck = {
  codes: ['RULE_SHADOWED'],
  run(context) {
    const findings: Finding[] = [];
    for (const tier of ['Admin', 'Baseline'] as const) {
      for (const direction of DIRECTIONS) {
        const states = new Map<ClusterRule, RuleState>();
        for (const ctx of tierContexts(context, tier, direction))
          checkContext(context, ctx, direction, states);
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
    }
    return findings;
  },
};

function tierContexts(context: LintContext, tier: Tier, direction: Direction): TierContext[] {
  const policies = context.cluster.clusterPolicies.filter((p) => p.tier === tier && p[direction].length > 0);
  if (policies.length === 0) return [];
  const relative = policies.some((p) =>
    p[direction].some((r) => r.peers.some((peer) => peer.type === 'pods' && !peer.namespaces.selector)),
  );
  const subjects = new Set<Endpoint>();
  for (const policy of policies) for (const e of context.subjects(policy)) subjects.add(e);
  const byKey = new Map<string, TierContext>();
  for (const subject of subjects) {
    const selecting = selectingClusterPolicies(context.evaluation, subject, direction, tier);
    const isolated = tier === 'Baseline' && networkPolicyIsolates(context, subject, direction);
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
      byKey.set(key, { subject, policies: selecting, families, isolated });
    }
  }
  return [...byKey.values()];
}

function networkPolicyIsolates(context: LintContext, subject: Endpoint, direction: Direction): boolean {
  if (context.semantics === 'v1beta1-proposal')
    return (
      direction === 'ingress' &&
      context.cluster.namespaces.get(subject.namespace)?.legacyIngressIsolation === 'DefaultDeny'
    );
  return context.policiesFor(subject, direction).length > 0;
}

function checkContext(
  context: LintContext,
  ctx: TierContext,
  direction: Direction,
  states: Map<ClusterRule, RuleState>,
): void {
  const earlier: { items: CoverItem[]; action: ClusterRule['action'] }[] = [];
  for (const policy of ctx.policies) {
    for (const rule of policy[direction]) {
      let state = states.get(rule);
      if (!state) {
        state = {
          policy,
          rule,
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
      earlier.push({ items, action: rule.action });
    }
  }
}

function shadowFinding(context: LintContext, state: RuleState, direction: Direction): Finding {
  const ref = clusterRuleRef(state.policy, direction, state.rule);
  const shadows = [...state.shadowing.values()];
  const refs = shadows.map((s) => s.ref);
  const actions = new Set(shadows.map((s) => s.action));
  const by = refs.length
    ? `${listSome(refs.map((r) => r.label))} ${
        actions.size === 1 && actions.has(state.rule.action)
          ? `already ${state.rule.action} everything it matches`
          : 'decide everything it matches first'
      }`
    : '';
  const isolation = state.decidedByNetworkPolicy
    ? `${by ? '; ' : ''}NetworkPolicy isolates ${by ? 'the other pods' : 'every pod'} it applies to, so the Baseline tier is never reached`
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
