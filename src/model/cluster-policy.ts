/**
 * Ordered, tiered policy in one shape: AdminNetworkPolicy and BaselineAdminNetworkPolicy
 * (policy.networking.k8s.io/v1alpha1) and ClusterNetworkPolicy (v1alpha2); Calico's
 * NetworkPolicy, GlobalNetworkPolicy and Profile (projectcalico.org/v3), in their tiers; Cilium's
 * CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (cilium.io/v2), whose allow and deny
 * rules sit where NetworkPolicy does. The APIs differ in spelling (Allow vs Accept, ports vs
 * protocols, selectors as expressions or as label maps) but each is a subject, ordered rules with
 * an action, peers and ports — so every later layer handles one type. docs/CALICO-CILIUM.md says
 * how each engine's fields map here.
 */
import type { Cidr } from '../net/ip.ts';
import { selectorMatches, type LabelSelector } from './selector.ts';
import type { Labels, Protocol, SourceLocation } from './basics.ts';

export type ClusterPolicyKind =
  | 'AdminNetworkPolicy'
  | 'BaselineAdminNetworkPolicy'
  | 'ClusterNetworkPolicy'
  /** projectcalico.org/v3 (and crd.projectcalico.org/v1) NetworkPolicy: namespaced. */
  | 'CalicoNetworkPolicy'
  | 'CalicoGlobalNetworkPolicy'
  /** A Calico Profile with rules (`kns.<namespace>`, `ksa.<namespace>.<serviceaccount>`): after every tier. */
  | 'CalicoProfile'
  | 'CiliumNetworkPolicy'
  | 'CiliumClusterwideNetworkPolicy';

/** The kinds of kubernetes-sigs/network-policy-api. */
export type NetworkPolicyApiKind =
  'AdminNetworkPolicy' | 'BaselineAdminNetworkPolicy' | 'ClusterNetworkPolicy';

/** Whose rules a policy follows: how its tier ends, and how its rules combine. */
export type PolicyEngine = 'network-policy-api' | 'calico' | 'cilium';

export function policyEngine(kind: ClusterPolicyKind): PolicyEngine {
  if (kind.startsWith('Calico')) return 'calico';
  if (kind.startsWith('Cilium')) return 'cilium';
  return 'network-policy-api';
}

/**
 * The tier a policy is in, by name. `Admin` (Calico's kube-admin) precedes `default` — where
 * NetworkPolicy sits, with Calico's default-tier policies and Cilium's — which precedes `Baseline`
 * (kube-baseline); other names are Calico tiers (Tier objects), ordered among these by their
 * `order`; `Profiles` (Calico's profiles) comes after every tier.
 */
export type Tier = string;
export const ADMIN_TIER = 'Admin';
export const BASELINE_TIER = 'Baseline';
export const DEFAULT_TIER = 'default';
export const PROFILES_TIER = 'Profiles';

/** A tier: where it sits, and what happens to a packet no rule of it decided. */
export interface TierSpec {
  readonly name: Tier;
  /** Lower first; Infinity when a Calico Tier gives none ("highest order, lowest precedence"). */
  readonly order: number;
  /**
   * When the tier applies to the pod (a policy of it selects the pod for the direction) but no
   * rule decided: `deny` (Calico's default, and NetworkPolicy's isolation) or `pass` (go on).
   */
  readonly defaultAction: 'deny' | 'pass';
  readonly location?: SourceLocation;
}

/** Calico's fixed orders: kube-admin 1,000, default 1,000,000, kube-baseline 10,000,000. */
export const BUILT_IN_TIERS: readonly TierSpec[] = [
  { name: ADMIN_TIER, order: 1_000, defaultAction: 'pass' },
  { name: DEFAULT_TIER, order: 1_000_000, defaultAction: 'deny' },
  { name: BASELINE_TIER, order: 10_000_000, defaultAction: 'pass' },
];

/** The tier a policy is in, with its order and default action. */
export function tierOf(policy: Pick<ClusterPolicy, 'tier' | 'tierSpec'>): TierSpec {
  return (
    policy.tierSpec ??
    BUILT_IN_TIERS.find((t) => t.name === policy.tier) ??
    (policy.tier === PROFILES_TIER
      ? { name: PROFILES_TIER, order: Infinity, defaultAction: 'deny' }
      : { name: policy.tier, order: Infinity, defaultAction: 'deny' })
  );
}

/** Calico's place for Kubernetes NetworkPolicy in the default tier (its `knp.default.*` policies). */
export const NETWORK_POLICY_ORDER = 1_000;
/** `allow` is the API's Allow (v1alpha1) and Accept (v1alpha2). */
export type ClusterRuleAction = 'allow' | 'deny' | 'pass';

/** The pods a policy applies to: pods matching both selectors (host-networked pods never). */
export interface ClusterSubject {
  readonly namespaceSelector: LabelSelector;
  /** Absent: every pod of the selected namespaces (`subject.namespaces`). */
  readonly podSelector?: LabelSelector;
}

/**
 * How a peer picks namespaces. The v0.1.1 shape could also select namespaces relative to the
 * subject's: sharing the values of `sameLabels`, or having none of `notSameLabels`' keys equal.
 */
export interface NamespaceMatch {
  readonly selector?: LabelSelector;
  readonly sameLabels?: readonly string[];
  readonly notSameLabels?: readonly string[];
}

export type ClusterPeer =
  | {
      readonly type: 'pods';
      readonly namespaces: NamespaceMatch;
      /** Absent: every pod of the matched namespaces (`namespaces` peer). */
      readonly podSelector?: LabelSelector;
    }
  | {
      readonly type: 'nodes';
      readonly selector: LabelSelector;
      /** Cilium's `host` (the subject's own node) and `remote-node` (every other node); absent: any. */
      readonly only?: 'own' | 'others';
    }
  /** Every address in the blocks, pods' included. */
  | { readonly type: 'networks'; readonly cidrs: readonly Cidr[] }
  /**
   * The addresses in the blocks that are no pod's and no node's: Cilium's `world` entity and its
   * CIDR rules, which select only what lies outside the cluster.
   */
  | { readonly type: 'outside'; readonly cidrs: readonly Cidr[] }
  | { readonly type: 'domainNames'; readonly names: readonly string[] };

export type ClusterPort =
  /** `port` absent: every port of the protocol. */
  | {
      readonly type: 'number';
      readonly protocol: Protocol;
      readonly port?: number;
      readonly endPort?: number;
    }
  /**
   * A container port name on the destination pod, of whatever protocol it declares — or only on
   * `protocol` (Calico and Cilium name a protocol with the port).
   */
  | { readonly type: 'named'; readonly name: string; readonly protocol?: Protocol };

export interface ClusterRule {
  /** Position in the policy's ingress or egress list (or in `field`'s). */
  readonly index: number;
  /** The list the rule is in when not `ingress`/`egress`: Cilium's `ingressDeny` and `egressDeny`. */
  readonly field?: string;
  readonly name?: string;
  readonly action: ClusterRuleAction;
  readonly peers: readonly ClusterPeer[];
  /** Absent: every port and protocol. */
  readonly ports?: readonly ClusterPort[];
  /**
   * A peer with no field Palisade knows (a newer API?). The API says to fail closed: an allow rule
   * then matches nothing, a deny or pass rule denies everything.
   */
  readonly failClosed?: boolean;
}

export interface ClusterPolicy {
  readonly kind: ClusterPolicyKind;
  readonly apiVersion: string;
  readonly name: string;
  /** Calico NetworkPolicy, CiliumNetworkPolicy: the namespace (their subject never leaves it). */
  readonly namespace?: string;
  readonly tier: Tier;
  /**
   * The tier's place and default action (Calico's Tier object, stamped on each of its policies so
   * both paths read tiers from the policies alone); absent: the built-in tier's, or for a tier
   * nothing defines, no order (last) and Deny.
   */
  readonly tierSpec?: TierSpec;
  /**
   * Lower first. AdminNetworkPolicy and ClusterNetworkPolicy: 0–1000 (BaselineAdminNetworkPolicy
   * has none; it ranks after every Baseline ClusterNetworkPolicy). Calico: `order`, Infinity when
   * unset. Cilium: 0 (its policies are unordered: deny rules before allow rules).
   */
  readonly priority: number;
  readonly subject: ClusterSubject;
  /** Further subjects (a Calico selector with `||`): the policy applies to what any selects. */
  readonly moreSubjects?: readonly ClusterSubject[];
  /**
   * The directions in which selecting a pod makes the tier apply to it even when no rule matches
   * (Calico's `types`; Cilium's default deny; a Profile): the tier's default action then decides.
   * Absent (the network-policy-api kinds): a policy acts only through its rules.
   */
  readonly isolates?: { readonly ingress: boolean; readonly egress: boolean };
  readonly ingress: readonly ClusterRule[];
  readonly egress: readonly ClusterRule[];
  /** Where the rules are in the manifest when not under `spec` (Cilium's `specs[i]`). */
  readonly specPath?: readonly (string | number)[];
  readonly location?: SourceLocation;
}

/** `AdminNetworkPolicy/name`, `CalicoNetworkPolicy/ns/name`: the kind tells same-named objects apart. */
export function clusterPolicyKey(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  return policy.namespace !== undefined
    ? `${policy.kind}/${policy.namespace}/${policy.name}`
    : `${policy.kind}/${policy.name}`;
}

const SHORT_NAMES: Record<ClusterPolicyKind, string> = {
  AdminNetworkPolicy: 'anp',
  BaselineAdminNetworkPolicy: 'banp',
  ClusterNetworkPolicy: 'cnp',
  CalicoNetworkPolicy: 'calico',
  CalicoGlobalNetworkPolicy: 'gnp',
  CalicoProfile: 'profile',
  CiliumNetworkPolicy: 'cilium',
  CiliumClusterwideNetworkPolicy: 'ccnp',
};

/**
 * The short name used in explanations: `anp/x`, `banp/default`, `cnp/x`, `calico/ns/x`, `gnp/x`,
 * `profile/kns.ns`, `cilium/ns/x`, `ccnp/x`.
 */
export function clusterPolicyLabel(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  const scope = policy.namespace !== undefined ? `${policy.namespace}/` : '';
  return `${SHORT_NAMES[policy.kind]}/${scope}${policy.name}`;
}

/**
 * The object as diagnostics, lint and diff name it: `AdminNetworkPolicy x`,
 * `GlobalNetworkPolicy.projectcalico.org x`, `NetworkPolicy.projectcalico.org ns/x` (not
 * Kubernetes' NetworkPolicy), `CiliumNetworkPolicy ns/x`.
 */
export function clusterPolicyObjectName(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  const kind =
    policyEngine(policy.kind) === 'calico' ? `${manifestKind(policy.kind)}.projectcalico.org` : policy.kind;
  return `${kind} ${policy.namespace !== undefined ? `${policy.namespace}/` : ''}${policy.name}`;
}

/** The kind as its manifest spells it (Calico's policies are `NetworkPolicy`, like Kubernetes'). */
export function manifestKind(kind: ClusterPolicyKind): string {
  if (kind === 'CalicoNetworkPolicy') return 'NetworkPolicy';
  if (kind === 'CalicoGlobalNetworkPolicy') return 'GlobalNetworkPolicy';
  if (kind === 'CalicoProfile') return 'Profile';
  return kind;
}

/** How explanations name a rule: `egress[2]`, or `ingressDeny[0]` for Cilium's deny lists. */
export function clusterRuleLabel(
  rule: Pick<ClusterRule, 'index' | 'field'>,
  direction: 'ingress' | 'egress',
): string {
  return `${rule.field ?? direction}[${rule.index}]`;
}

/** Every subject of a policy: its subject and, for Calico selectors with `||`, the others. */
export function policySubjects(
  policy: Pick<ClusterPolicy, 'subject' | 'moreSubjects'>,
): readonly ClusterSubject[] {
  return policy.moreSubjects ? [policy.subject, ...policy.moreSubjects] : [policy.subject];
}

/** Whether the policy holds a pod to its tier in a direction (see ClusterPolicy.isolates). */
export function policyIsolates(
  policy: Pick<ClusterPolicy, 'isolates'>,
  direction: 'ingress' | 'egress',
): boolean {
  return policy.isolates?.[direction] ?? false;
}

/** Whether a policy has anything to say about a direction: rules, or isolation. */
export function policyApplies(
  policy: Pick<ClusterPolicy, 'isolates' | 'ingress' | 'egress'>,
  direction: 'ingress' | 'egress',
): boolean {
  return policy[direction].length > 0 || policyIsolates(policy, direction);
}

/** Whether a policy's subject selects a pod (host-networked pods are never subjects). */
export function subjectSelects(
  subject: ClusterSubject,
  namespaceLabels: Labels | undefined,
  endpoint: { readonly labels: Labels; readonly hostNetwork: boolean },
): boolean {
  if (endpoint.hostNetwork || !namespaceLabels) return false;
  if (!selectorMatches(subject.namespaceSelector, namespaceLabels)) return false;
  return !subject.podSelector || selectorMatches(subject.podSelector, endpoint.labels);
}

/** Whether any of a policy's subjects selects a pod. */
export function policySelects(
  policy: Pick<ClusterPolicy, 'subject' | 'moreSubjects'>,
  namespaceLabels: Labels | undefined,
  endpoint: { readonly labels: Labels; readonly hostNetwork: boolean },
): boolean {
  if (subjectSelects(policy.subject, namespaceLabels, endpoint)) return true;
  return policy.moreSubjects?.some((s) => subjectSelects(s, namespaceLabels, endpoint)) ?? false;
}

/** Namespace selection, including v0.1.1's relative forms (sameLabels, notSameLabels). */
export function namespaceMatches(match: NamespaceMatch, labels: Labels, subjectLabels: Labels): boolean {
  if (match.selector) return selectorMatches(match.selector, labels);
  if (match.sameLabels) {
    // An empty list selects nothing (API text).
    return (
      match.sameLabels.length > 0 &&
      match.sameLabels.every(
        (key) => key in labels && key in subjectLabels && labels[key] === subjectLabels[key],
      )
    );
  }
  if (match.notSameLabels) {
    return (
      match.notSameLabels.length > 0 &&
      match.notSameLabels.every((key) => key in labels && labels[key] !== subjectLabels[key])
    );
  }
  return false;
}

/**
 * What a cluster-policy named port means on a pod: its container port of that name, on each
 * protocol (the first one, should a pod repeat a name — as NetworkPolicy's resolution does), or
 * on `protocol` only when given.
 */
export function namedPortTargets(
  ports: readonly { readonly name?: string; readonly protocol: Protocol; readonly port: number }[],
  name: string,
  protocol?: Protocol,
): { protocol: Protocol; port: number }[] {
  const targets: { protocol: Protocol; port: number }[] = [];
  for (const p of ports)
    if (
      p.name === name &&
      (protocol === undefined || p.protocol === protocol) &&
      !targets.some((t) => t.protocol === p.protocol)
    )
      targets.push({ protocol: p.protocol, port: p.port });
  return targets;
}
