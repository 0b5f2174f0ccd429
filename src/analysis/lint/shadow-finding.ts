/**
 * How a shadowed rule is told (check-shadowing.ts finds them): what decides first, and a fix that
 * fits the engine whose order it is. Each engine orders rules its own way — AdminNetworkPolicy
 * and ClusterNetworkPolicy by priority, Calico by order within tiers, Cilium not at all (a deny
 * wins over every allow), NetworkPolicy at order 1000 of Calico's default tier — so "give it a
 * lower priority number" is advice only for the first.
 */
import { policyEngine, type PolicyEngine } from '../../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, NetworkPolicy, PolicyRule } from '../../model/types.ts';
import { listSome, type Direction, type LintContext } from './context.ts';
import type { RuleRef } from './cover.ts';
import { clusterRuleRef, networkPolicyRuleRef } from './cover-items.ts';
import type { Finding } from './types.ts';

/** A rule of a tier: a cluster policy's, or (NetworkPolicy's tier) a NetworkPolicy's, which allows. */
export type TierRule =
  | { readonly kind: 'cluster'; readonly policy: ClusterPolicy; readonly rule: ClusterRule }
  | { readonly kind: 'networkPolicy'; readonly policy: NetworkPolicy; readonly rule: PolicyRule };

/** What is known about a rule so far. */
export interface RuleState {
  readonly entry: TierRule;
  live: boolean;
  matchesSomething: boolean;
  decidedByNetworkPolicy: boolean;
  /** The tier, when it comes after NetworkPolicy's and is not Baseline (for the message). */
  readonly later?: string;
  /** Rules that decide first, by label. */
  readonly shadowing: Map<string, { readonly ref: RuleRef; readonly by: TierRule }>;
}

/** Whose order a rule follows: a cluster policy's engine, or NetworkPolicy's. */
type Engine = PolicyEngine | 'networkPolicy';

function engineOf(entry: TierRule): Engine {
  return entry.kind === 'networkPolicy' ? 'networkPolicy' : policyEngine(entry.policy.kind);
}

/** NetworkPolicy rules only allow. */
function actionOf(entry: TierRule): ClusterRule['action'] {
  return entry.kind === 'networkPolicy' ? 'allow' : entry.rule.action;
}

function refOf(entry: TierRule, direction: Direction): RuleRef {
  return entry.kind === 'networkPolicy'
    ? networkPolicyRuleRef(entry.policy, direction, entry.rule)
    : clusterRuleRef(entry.policy, direction, entry.rule);
}

export function shadowFinding(context: LintContext, state: RuleState, direction: Direction): Finding {
  const ref = refOf(state.entry, direction);
  const shadows = [...state.shadowing.values()];
  const refs = shadows.map((s) => s.ref);
  const actions = new Set(shadows.map((s) => actionOf(s.by)));
  const own = actionOf(state.entry);
  const engine = engineOf(state.entry);
  // Cilium: an allow that deny rules always win over (a NetworkPolicy allow as well: it sits with Cilium's).
  const denyWins =
    (engine === 'cilium' || engine === 'networkPolicy') &&
    own === 'allow' &&
    shadows.length > 0 &&
    shadows.every((s) => engineOf(s.by) === 'cilium' && actionOf(s.by) === 'deny');
  const by = refs.length
    ? denyWins
      ? `deny wins: ${listSome(refs.map((r) => r.label))} ${refs.length === 1 ? 'denies' : 'deny'} everything it matches`
      : `${listSome(refs.map((r) => r.label))} ${
          actions.size === 1 && actions.has(own)
            ? `already ${refs.length === 1 ? thirdPerson(own) : own} everything it matches`
            : `${refs.length === 1 ? 'decides' : 'decide'} everything it matches first`
        }`
    : '';
  const isolation = state.decidedByNetworkPolicy
    ? `${by ? '; ' : ''}NetworkPolicy${state.later !== undefined ? "'s tier" : ''} isolates ${by ? 'the other pods' : 'every pod'} it applies to, so the ${state.later !== undefined ? `tier ${state.later}` : 'Baseline tier'} is never reached`
    : '';
  const hint = [
    ...(shadows.length ? [precedenceHint(state.entry, shadows, denyWins)] : []),
    ...(state.decidedByNetworkPolicy ? [isolationHint(state.later)] : []),
  ].join('; ');
  return context.finding(
    'RULE_SHADOWED',
    `${ref.label} never decides: ${by}${isolation}`,
    context.where(ref.object, ref.path, ref.location),
    shadows.slice(0, 10).map(({ ref: r, by: entry }) => ({
      ...context.where(r.object, r.path, r.location),
      message: `decides first: ${r.label} (${actionOf(entry)})`,
    })),
    hint,
  );
}

/** How to fix a rule the rules before it decide for, in the terms of its engine's order. */
function precedenceHint(
  entry: TierRule,
  shadows: readonly { readonly by: TierRule }[],
  denyWins: boolean,
): string {
  if (denyWins)
    return 'narrow or remove the Cilium deny rule that covers it (a deny wins over every allow, whatever its policy), or delete this rule';
  const own = actionOf(entry);
  if (shadows.every((s) => actionOf(s.by) === own))
    return `delete the rule: the rules that decide first already ${own} everything it matches`;
  const ownPolicy = shadows.every((s) => s.by.policy === entry.policy);
  const engine = engineOf(entry);
  if (ownPolicy && (engine === 'network-policy-api' || engine === 'calico'))
    return 'delete the rule, or move it before the rules of its policy that decide first';
  if (engine === 'network-policy-api')
    return 'delete the rule, or give its policy a lower priority number than the policies that decide first';
  if (engine === 'calico') {
    const atThousand = shadows.some((s) => engineOf(s.by) !== 'calico');
    return `delete the rule, or give its policy a lower order than the policies that decide first${atThousand ? " (NetworkPolicy's and Cilium's rules sit at order 1000 of the default tier)" : ''}`;
  }
  // Cilium's rules and NetworkPolicy's have no order of their own: what decides first must change.
  const fixes: string[] = [];
  if (shadows.some((s) => engineOf(s.by) === 'calico'))
    fixes.push(
      "narrow the Calico rules that decide first, or give their policy an order above 1000 (where NetworkPolicy's and Cilium's rules sit in Calico's default tier)",
    );
  if (own === 'allow' && shadows.some((s) => engineOf(s.by) === 'cilium' && actionOf(s.by) === 'deny'))
    fixes.push('narrow or remove the Cilium deny rules that cover it (a deny wins over every allow)');
  return ['delete the rule', ...fixes].join(', or ');
}

/** How to fix a rule of a tier after NetworkPolicy's that pods NetworkPolicy isolates never reach. */
function isolationHint(later: string | undefined): string {
  return later === undefined
    ? 'for pods NetworkPolicy isolates, put the rule in an AdminNetworkPolicy (the Admin tier decides before NetworkPolicy), or delete it'
    : `for pods the default tier holds, move the policy to a tier ordered before the default tier, or Pass this traffic there to tier ${later}, or delete the rule`;
}

/** `allow` → `allows`, `deny` → `denies`, `pass` → `passes`: one rule's verb. */
function thirdPerson(action: string): string {
  if (action.endsWith('y')) return `${action.slice(0, -1)}ies`;
  return action.endsWith('s') ? `${action}es` : `${action}s`;
}
