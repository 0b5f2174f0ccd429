/**
 * A pod side's ordered lists when Calico's tiers or Calico's or Cilium's policies are in the
 * store (the network-policy-api alone keeps tier-tables.ts's Admin/Baseline pair): every tier
 * the side visits, in order (model/tier-order.ts), as 6-tuples — the tiers before NetworkPolicy's
 * in `admin`, those after in `baseline`, a break where each tier starts (a pass skips to it), and
 * a deny-everything rule closing a tier whose default action denies what none of its rules did.
 * When Calico's or Cilium's policies select the pod in NetworkPolicy's tier, that tier goes into
 * `admin` as well, in the reference evaluator's order (semantics/default-tier.ts): Calico's
 * policies by order, and at order 1000 Cilium's deny rules, the pod's own node (allowed, as
 * NetworkPolicy allows it), Cilium's allow rules and the NetworkPolicy table's permits.
 */
import { hash } from 'node:crypto';
import { hostCidr } from '../net/ip.ts';
import {
  DEFAULT_TIER,
  NETWORK_POLICY_ORDER,
  policyEngine,
  policyIsolates,
  type ClusterPolicy,
  type ClusterRule,
  type TierSpec,
} from '../model/cluster-policy.ts';
import { calicoTieText, tieBreak } from '../model/precedence.ts';
import { ANY_NET, ruleText, type Rule, type RuleTable } from '../model/rule.ts';
import type { Endpoint } from '../model/types.ts';
import type { CompilingStore, TierSelection } from '../state/index.ts';
import type { TieredTable } from './types.ts';

type Direction = 'ingress' | 'egress';

/** Expands one policy's rules for a pod (tier-tables.ts): the same 6-tuples both paths use. */
export type PolicyRules = (pod: Endpoint, policy: ClusterPolicy, direction: Direction) => readonly Rule[];
/** Expands one rule of a policy. */
export type RuleRules = (
  pod: Endpoint,
  policy: ClusterPolicy,
  rule: ClusterRule,
  direction: Direction,
) => Rule[];

/** Keys of the rules the compiler adds (they name no policy rule): under any policy's, since hashes are 24 bits. */
const SYNTHETIC = 2 ** 52;
const NETWORK_POLICY_KEY = SYNTHETIC + 1;
const NODE_KEY = SYNTHETIC + 2;
const tierEndKey = (tier: string): number =>
  SYNTHETIC + 4 + tieBreak({ kind: 'ClusterNetworkPolicy', name: tier });

/** One list being built: its rules, where each tier starts, and whether a pass needs the starts. */
class ListBuilder {
  readonly rules: Rule[] = [];
  readonly starts: number[] = [];
  /** The first tier holding a pass rule (then the starts are needed when another tier follows). */
  private passAt = -1;

  startTier(): void {
    if (this.rules.length > 0) this.starts.push(this.rules.length);
  }
  push(rules: readonly Rule[]): void {
    for (const rule of rules) {
      if (rule.action === 'pass' && this.passAt < 0) this.passAt = this.starts.length;
      this.rules.push(rule);
    }
  }
  /** The starts, when a pass lies before the last tier. */
  breaks(): number[] | undefined {
    return this.passAt >= 0 && this.passAt < this.starts.length ? this.starts : undefined;
  }
}

/** The inputs of a side's lists that are not the pod itself. */
export interface SideInputs {
  readonly plan: readonly TierSpec[];
  /** The tier selections in `plan`'s order (the default tier's: Calico's and Cilium's policies). */
  readonly selections: readonly TierSelection[];
  /** The pod's NetworkPolicy table for the direction, when one isolates it. */
  readonly networkPolicy: RuleTable | undefined;
  readonly allowNodeLocal: boolean;
}

/** The side's lists, or undefined when no tier applies to the pod. */
export function tierLists(
  state: CompilingStore,
  pod: Endpoint,
  direction: Direction,
  inputs: SideInputs,
  policyRules: PolicyRules,
  ruleRules: RuleRules,
): TieredTable | undefined {
  const admin = new ListBuilder();
  const baseline = new ListBuilder();
  let before = true;
  let inlined = false;
  inputs.plan.forEach((tier, i) => {
    const policies = inputs.selections[i]?.policies ?? [];
    if (tier.name === DEFAULT_TIER) {
      before = false;
      if (policies.length === 0) return;
      inlined = true;
      admin.startTier();
      admin.push(defaultTierRules(state, pod, direction, policies, inputs, policyRules, ruleRules));
      return;
    }
    if (policies.length === 0) return;
    const list = before ? admin : baseline;
    list.startTier();
    for (const policy of policies) list.push(policyRules(pod, policy, direction));
    if (tier.defaultAction === 'deny' && policies.some((p) => policyIsolates(p, direction)))
      list.push([denyAll(tierEndKey(tier.name))]);
  });
  if (admin.rules.length === 0 && baseline.rules.length === 0 && !inlined) return undefined;
  const adminBreaks = admin.breaks();
  const baselineBreaks = baseline.breaks();
  const text = [
    ...admin.rules.map(ruleText),
    `-- ${adminBreaks?.join(',') ?? ''}${inlined ? ' inline' : ''}`,
    ...baseline.rules.map(ruleText),
    `-- ${baselineBreaks?.join(',') ?? ''}`,
  ].join('\n');
  return {
    id: hash('sha256', text).slice(0, 16),
    admin: admin.rules,
    baseline: baseline.rules,
    ...(adminBreaks ? { adminBreaks } : {}),
    ...(baselineBreaks ? { baselineBreaks } : {}),
    ...(inlined ? { inlinesNetworkPolicy: true } : {}),
  };
}

/** NetworkPolicy's tier with Calico's or Cilium's policies in it, in the reference evaluator's order. */
function defaultTierRules(
  state: CompilingStore,
  pod: Endpoint,
  direction: Direction,
  policies: readonly ClusterPolicy[],
  inputs: SideInputs,
  policyRules: PolicyRules,
  ruleRules: RuleRules,
): Rule[] {
  const calico = policies.filter((p) => policyEngine(p.kind) === 'calico');
  const cilium = policies.filter((p) => policyEngine(p.kind) === 'cilium');
  const np = inputs.networkPolicy;
  const isolated =
    np !== undefined ||
    calico.some((p) => policyIsolates(p, direction)) ||
    cilium.some((p) => policyIsolates(p, direction));
  const out: Rule[] = [];
  const ciliumOf = (action: 'allow' | 'deny'): Rule[] =>
    cilium.flatMap((policy) =>
      policy[direction]
        .filter((rule) => rule.action === action)
        .flatMap((rule) => ruleRules(pod, policy, rule, direction)),
    );
  // Entries as default-tier.ts orders them: Calico's by order and name; at order 1000 first
  // Cilium's rules and the node (an empty name), then the NetworkPolicies (`knp.default.`).
  const entries: { order: number; tie: string; rules: () => Rule[] }[] = [
    ...calico.map((policy) => ({
      order: policy.priority,
      tie: calicoTieText(policy),
      rules: () => [...policyRules(pod, policy, direction)],
    })),
    {
      order: NETWORK_POLICY_ORDER,
      tie: '',
      rules: () => [
        ...ciliumOf('deny'),
        ...(isolated && inputs.allowNodeLocal ? nodePermits(state, pod, direction) : []),
        ...ciliumOf('allow'),
      ],
    },
    ...(np
      ? [
          {
            order: NETWORK_POLICY_ORDER,
            tie: 'knp.default.',
            // The table's permits (its last rule denies the rest: the tier's end does that here).
            rules: () =>
              np.rules
                .filter((rule) => rule.action === 'permit')
                .map((rule) => ({ ...rule, precedence: NETWORK_POLICY_KEY })),
          },
        ]
      : []),
  ];
  entries.sort((a, b) =>
    a.order !== b.order ? (a.order < b.order ? -1 : 1) : a.tie < b.tie ? -1 : a.tie > b.tie ? 1 : 0,
  );
  for (const entry of entries) for (const rule of entry.rules()) out.push(rule);
  if (isolated) out.push(denyAll(tierEndKey(DEFAULT_TIER)));
  return out;
}

/** Permits for the pod's own node's addresses (NetworkPolicy always lets a pod talk with its node). */
function nodePermits(state: CompilingStore, pod: Endpoint, direction: Direction): Rule[] {
  if (pod.node === undefined) return [];
  const node = state.nodes().find((n) => n.name === pod.node);
  return (node?.addresses ?? []).map((ip) => {
    const net = { kind: 'cidr' as const, cidr: hostCidr(ip) };
    return {
      action: 'permit' as const,
      protocol: 'ANY' as const,
      src: direction === 'ingress' ? net : ANY_NET,
      dst: direction === 'egress' ? net : ANY_NET,
      precedence: NODE_KEY,
    };
  });
}

function denyAll(precedence: number): Rule {
  return { action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET, precedence };
}
