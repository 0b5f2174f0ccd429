/**
 * Shadowed rules. Within a tier the first matching rule decides, so a rule is dead when, for every
 * pod it applies to, the rules before it (of its own policy and of policies of higher precedence
 * selecting that pod) already match everything it matches — whatever their action. A rule of a
 * tier after NetworkPolicy's (Baseline, Calico's later tiers) is also dead for pods that tier
 * isolates in its direction: those are decided before the tier is reached.
 *
 * Every tier is checked: Calico's tiers (a policy shadowed by one of a lower order), and
 * NetworkPolicy's tier as the evaluator walks it (semantics/default-tier.ts) — Calico's policies by
 * order, and at order 1000 Cilium's rules, its deny rules first (so an allow that a deny always
 * wins over is dead), then the NetworkPolicies selecting the pod. A NetworkPolicy rule is dead when
 * what decides before it — Calico's rules of a lower order, Cilium's deny rules — matches
 * everything it matches; a Calico rule after the NetworkPolicies, when their rules (allow, for
 * what they match; what they do not match goes on) and the rest before it do. NetworkPolicy's
 * rules and Cilium's allow rules are one union of allows: neither is taken to shadow the other
 * (nor a NetworkPolicy rule another: that is RULE_REDUNDANT's question).
 *
 * Pods are checked per context — the same policies of the tier selecting them in precedence
 * order, the same namespace labels when a peer is relative to the subject's namespace, the same
 * named ports (ingress), the same address families — and each rule's cover items are built once
 * per context, so a tier of n rules costs n containment checks per context, not n². The
 * NetworkPolicies selecting a context's pods differ from pod to pod, but a NetworkPolicy rule's
 * items do not (it names its own namespace; ports and families are the context's), so each is
 * checked once per context; only a Calico rule after them that the rules before them do not
 * already cover is checked once per distinct set of them.
 */
import {
  BASELINE_TIER,
  clusterPolicyLabel,
  DEFAULT_TIER,
  policyEngine,
  policyIsolates,
  type TierSpec,
} from '../../model/cluster-policy.ts';
import type { ClusterPolicy, Endpoint, NetworkPolicy } from '../../model/types.ts';
import type { IpFamily } from '../../net/ip.ts';
import {
  ciliumRules,
  defaultTierEntries,
  selectingClusterPolicies,
  tierPlan,
} from '../../semantics/index.ts';
import { DIRECTIONS, type Direction, type LintCheck, type LintContext } from './context.ts';
import { covers, type CoverItem } from './cover.ts';
import { clusterRuleItems, networkPolicyItems } from './cover-items.ts';
import { shadowFinding, type RuleState, type TierRule } from './shadow-finding.ts';
import type { Finding } from './types.ts';

type ClusterTierRule = Extract<TierRule, { kind: 'cluster' }>;

/** A context's rules in the order they decide, with the NetworkPolicies' place among them. */
type TierEntry = ClusterTierRule | { readonly kind: 'networkPolicies' };

interface TierContext {
  readonly subject: Endpoint;
  /** The tier's rules for the subject, in the order they decide. */
  readonly rules: readonly TierEntry[];
  readonly families: readonly IpFamily[] | undefined;
  /** NetworkPolicy's tier isolates the subject in this direction (a tier after it never decides for it). */
  readonly isolated: boolean;
  /** NetworkPolicy's tier: each distinct set of NetworkPolicies selecting the context's pods (empty: some pod has none). */
  readonly networkPolicySets: readonly (readonly NetworkPolicy[])[];
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
        const states = new Map<TierRule['rule'], RuleState>();
        for (const ctx of tierContexts(context, tier, after, direction))
          checkContext(
            context,
            ctx,
            direction,
            states,
            after && tier.name !== BASELINE_TIER ? tier.name : undefined,
          );
        const dead = [...states.values()].filter(
          (state) =>
            !state.live &&
            !(state.entry.kind === 'cluster' && state.entry.rule.failClosed) &&
            (state.matchesSomething || state.decidedByNetworkPolicy),
        );
        const kept = direction === 'egress' ? egressIsolationKept(context, dead) : new Set<RuleState>();
        for (const state of dead)
          if (!kept.has(state)) findings.push(shadowFinding(context, state, direction));
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
  // The evaluator reads Calico's and Cilium's policies of the default tier under v1 semantics
  // only (semantics/evaluate.ts): under the proposal's they decide nothing, so shadow nothing.
  if (tier.name === DEFAULT_TIER && context.semantics !== 'v1') return [];
  const relative = policies.some((p) =>
    p[direction].some((r) => r.peers.some((peer) => peer.type === 'pods' && !peer.namespaces.selector)),
  );
  const subjects = new Set<Endpoint>();
  for (const policy of policies) for (const e of context.subjects(policy)) subjects.add(e);
  const withNetworkPolicies = tier.name === DEFAULT_TIER;
  if (withNetworkPolicies) addNetworkPolicySubjects(context, subjects, direction);
  const byKey = new Map<
    string,
    {
      subject: Endpoint;
      selecting: readonly ClusterPolicy[];
      isolated: boolean;
      sets: Map<string, readonly NetworkPolicy[]>;
    }
  >();
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
    let found = byKey.get(key);
    if (!found) byKey.set(key, (found = { subject, selecting, isolated, sets: new Map() }));
    if (!withNetworkPolicies) continue;
    const networkPolicies = context.policiesFor(subject, direction);
    found.sets.set(networkPolicies.map((p) => context.policyId(p)).join(','), networkPolicies);
  }
  return [...byKey.values()].map(({ subject, selecting, isolated, sets }) => {
    const networkPolicySets = [...sets.values()];
    return {
      subject,
      rules: orderedRules(tier, selecting, networkPolicySets.find((s) => s.length > 0) ?? [], direction),
      families: subject.ips.length ? [...new Set(subject.ips.map((ip) => ip.family))].sort() : undefined,
      isolated,
      networkPolicySets,
    };
  });
}

/**
 * Every pod of the NetworkPolicies that select one of the tier's subjects: a NetworkPolicy rule is
 * dead only if it is for each pod it applies to, those no Calico or Cilium policy selects included.
 */
function addNetworkPolicySubjects(context: LintContext, subjects: Set<Endpoint>, direction: Direction): void {
  const seen = new Set<NetworkPolicy>();
  for (const subject of [...subjects])
    for (const policy of context.policiesFor(subject, direction)) {
      if (seen.has(policy)) continue;
      seen.add(policy);
      for (const e of appliesTo(context, policy, direction)) subjects.add(e);
    }
}

/** The pods a NetworkPolicy applies to in a direction, as the evaluator selects them (semantics/match.ts). */
function appliesTo(context: LintContext, policy: NetworkPolicy, direction: Direction): readonly Endpoint[] {
  // The v1beta1 proposal has ingress policies only, whatever the object says.
  const affects =
    context.semantics === 'v1beta1-proposal'
      ? direction === 'ingress'
      : direction === 'ingress'
        ? policy.affectsIngress
        : policy.affectsEgress;
  return affects ? context.selection(policy) : [];
}

/**
 * The tier's rules in the order they decide (NetworkPolicy's tier: Calico's by order, Cilium's
 * deny rules first, then its allow rules and the NetworkPolicies'). `networkPolicies`: any set of
 * them selecting the pods, to place them (their place is the same for every set that is not empty).
 */
function orderedRules(
  tier: TierSpec,
  policies: readonly ClusterPolicy[],
  networkPolicies: readonly NetworkPolicy[],
  direction: Direction,
): TierEntry[] {
  const all = (policy: ClusterPolicy): TierEntry[] =>
    policy[direction].map((rule) => ({ kind: 'cluster', policy, rule }));
  if (tier.name !== DEFAULT_TIER) return policies.flatMap(all);
  const members = {
    calico: policies.filter((p) => policyEngine(p.kind) === 'calico'),
    cilium: policies.filter((p) => policyEngine(p.kind) === 'cilium'),
    networkPolicies,
  };
  const cilium = (action: 'allow' | 'deny'): TierEntry[] =>
    ciliumRules(members, direction, action).map(({ policy, rule }) => ({ kind: 'cluster', policy, rule }));
  return defaultTierEntries(members).flatMap((entry): TierEntry[] =>
    entry.kind === 'calico'
      ? all(entry.policy)
      : entry.kind === 'segment'
        ? [...cilium('deny'), ...cilium('allow')]
        : [{ kind: 'networkPolicies' }],
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

/** Whether a rule decides before NetworkPolicy's rules (Calico's before them, Cilium's deny rules). */
function decidesBeforeNetworkPolicy(entry: ClusterTierRule): boolean {
  const engine = policyEngine(entry.policy.kind);
  return engine === 'calico' || (engine === 'cilium' && entry.rule.action === 'deny');
}

interface Earlier {
  readonly items: CoverItem[];
  readonly entry: TierRule;
}

function checkContext(
  context: LintContext,
  ctx: TierContext,
  direction: Direction,
  states: Map<TierRule['rule'], RuleState>,
  later: string | undefined,
): void {
  const stateOf = (entry: TierRule): RuleState => {
    let state = states.get(entry.rule);
    if (!state) {
      state = {
        entry,
        ...(later !== undefined ? { later } : {}),
        live: false,
        matchesSomething: false,
        decidedByNetworkPolicy: false,
        shadowing: new Map(),
      };
      states.set(entry.rule, state);
    }
    return state;
  };
  /** Whether the right side covers the rule's items; what covers them is noted on the rule. */
  const judge = (state: RuleState, items: readonly CoverItem[], right: readonly Earlier[]): boolean => {
    const result = covers(
      items,
      right.flatMap((e) => e.items),
      context.endpoints,
      ctx.families,
    );
    if (!result.contained) return false;
    if (!result.empty) state.matchesSomething = true;
    for (const ref of result.covering) {
      const by = right.find((e) => e.items.some((i) => i.rule === ref))?.entry;
      if (by) state.shadowing.set(ref.label, { ref, by });
    }
    return true;
  };
  const earlier: Earlier[] = [];
  // Per set of NetworkPolicies, their rules' items (once the tier has reached them).
  let networkPolicyRules: (() => (readonly Earlier[])[]) | undefined;
  for (const entry of ctx.rules) {
    if (entry.kind === 'networkPolicies') {
      networkPolicyRules = checkNetworkPolicies(context, ctx, direction, earlier, stateOf, judge);
      continue;
    }
    const state = stateOf(entry);
    const failClosed = entry.rule.failClosed === true;
    const items = clusterRuleItems(context, entry.policy, direction, entry.rule, ctx.subject);
    if (ctx.isolated) state.decidedByNetworkPolicy = true;
    else if (!state.live && !failClosed && !judge(state, items, earlier)) {
      // Not covered by the policies before: with NetworkPolicies before it, each set's rules may cover the rest.
      state.live =
        !networkPolicyRules ||
        !networkPolicyRules().every((set) => judge(state, items, [...earlier, ...set]));
    }
    // A Calico or Cilium rule Palisade cannot analyse (fail-closed) is not taken to shadow others.
    if (!failClosed || policyEngine(entry.policy.kind) === 'network-policy-api')
      earlier.push({ items, entry });
  }
}

/**
 * The NetworkPolicies' rules at their place: each checked once against what decides before them
 * (their items are the same for every pod of the context). Returns each set's rules, built when a
 * Calico rule after them asks; a set that is empty (a pod no NetworkPolicy selects) has none.
 */
function checkNetworkPolicies(
  context: LintContext,
  ctx: TierContext,
  direction: Direction,
  earlier: readonly Earlier[],
  stateOf: (entry: TierRule) => RuleState,
  judge: (state: RuleState, items: readonly CoverItem[], right: readonly Earlier[]) => boolean,
): () => (readonly Earlier[])[] {
  const before = earlier.filter((e) => e.entry.kind === 'cluster' && decidesBeforeNetworkPolicy(e.entry));
  const built = new Map<NetworkPolicy, Earlier[]>();
  const rulesOf = (policy: NetworkPolicy): Earlier[] => {
    let found = built.get(policy);
    if (!found)
      built.set(
        policy,
        (found = policy[direction].map((rule) => ({
          items: networkPolicyItems(context, policy, direction, rule, ctx.subject),
          entry: { kind: 'networkPolicy', policy, rule },
        }))),
      );
    return found;
  };
  for (const policy of new Set(ctx.networkPolicySets.flat()))
    for (const [i, rule] of policy[direction].entries()) {
      const state = stateOf({ kind: 'networkPolicy', policy, rule });
      if (state.live) continue;
      // Nothing decides before them: no need to build the rule's items to know it is live.
      if (before.length === 0) state.live = true;
      else if (!judge(state, rulesOf(policy)[i]?.items ?? [], before)) state.live = true;
    }
  let sets: (readonly Earlier[])[] | undefined;
  return () => (sets ??= ctx.networkPolicySets.map((set) => set.flatMap(rulesOf)));
}

/**
 * Dead egress rules to leave unreported: a NetworkPolicy without explicit policyTypes isolates for
 * egress because it has egress rules, so deleting all of them would also end that isolation —
 * which changes connections unless a Calico or Cilium policy holds every pod it applies to as well.
 * Its last egress rule is then kept.
 */
function egressIsolationKept(context: LintContext, dead: readonly RuleState[]): Set<RuleState> {
  const kept = new Set<RuleState>();
  if (context.semantics !== 'v1') return kept;
  const byPolicy = new Map<NetworkPolicy, RuleState[]>();
  for (const state of dead)
    if (state.entry.kind === 'networkPolicy' && !state.entry.policy.policyTypesExplicit)
      byPolicy.set(state.entry.policy, [...(byPolicy.get(state.entry.policy) ?? []), state]);
  for (const [policy, states] of byPolicy) {
    if (states.length < policy.egress.length) continue;
    const heldElsewhere = appliesTo(context, policy, 'egress').every((e) =>
      selectingClusterPolicies(context.evaluation, e, 'egress', DEFAULT_TIER).some((p) =>
        policyIsolates(p, 'egress'),
      ),
    );
    const last = states.at(-1);
    if (!heldElsewhere && last) kept.add(last);
  }
  return kept;
}
