/**
 * Ordered, tiered cluster policy — AdminNetworkPolicy and BaselineAdminNetworkPolicy
 * (policy.networking.k8s.io/v1alpha1) and ClusterNetworkPolicy (v1alpha2) — normalized into one
 * shape. The three APIs differ in spelling (Allow vs Accept, ports vs protocols, namespaces vs
 * sameLabels) but not in meaning, so every later layer handles one type.
 */
import type { Cidr } from '../net/ip.ts';
import { selectorMatches, type LabelSelector } from './selector.ts';
import type { Labels, Protocol, SourceLocation } from './basics.ts';

export type ClusterPolicyKind = 'AdminNetworkPolicy' | 'BaselineAdminNetworkPolicy' | 'ClusterNetworkPolicy';
/** Admin precedes NetworkPolicy, which precedes Baseline. */
export type Tier = 'Admin' | 'Baseline';
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
  | { readonly type: 'nodes'; readonly selector: LabelSelector }
  | { readonly type: 'networks'; readonly cidrs: readonly Cidr[] }
  | { readonly type: 'domainNames'; readonly names: readonly string[] };

export type ClusterPort =
  /** `port` absent: every port of the protocol. */
  | {
      readonly type: 'number';
      readonly protocol: Protocol;
      readonly port?: number;
      readonly endPort?: number;
    }
  /** A container port name on the destination pod, of whatever protocol it declares. */
  | { readonly type: 'named'; readonly name: string };

export interface ClusterRule {
  /** Position in the policy's ingress or egress list. */
  readonly index: number;
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
  readonly tier: Tier;
  /** 0–1000, lower first. BaselineAdminNetworkPolicy has none; it ranks after every Baseline ClusterNetworkPolicy. */
  readonly priority: number;
  readonly subject: ClusterSubject;
  readonly ingress: readonly ClusterRule[];
  readonly egress: readonly ClusterRule[];
  readonly location?: SourceLocation;
}

/** `AdminNetworkPolicy/name`: cluster-scoped, so the kind tells same-named objects apart. */
export function clusterPolicyKey(policy: Pick<ClusterPolicy, 'kind' | 'name'>): string {
  return `${policy.kind}/${policy.name}`;
}

/** The short name used in explanations: `anp/x`, `banp/default`, `cnp/x`. */
export function clusterPolicyLabel(policy: Pick<ClusterPolicy, 'kind' | 'name'>): string {
  const short =
    policy.kind === 'AdminNetworkPolicy'
      ? 'anp'
      : policy.kind === 'BaselineAdminNetworkPolicy'
        ? 'banp'
        : 'cnp';
  return `${short}/${policy.name}`;
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
 * protocol (the first one, should a pod repeat a name — as NetworkPolicy's resolution does).
 */
export function namedPortTargets(
  ports: readonly { readonly name?: string; readonly protocol: Protocol; readonly port: number }[],
  name: string,
): { protocol: Protocol; port: number }[] {
  const targets: { protocol: Protocol; port: number }[] = [];
  for (const p of ports)
    if (p.name === name && !targets.some((t) => t.protocol === p.protocol))
      targets.push({ protocol: p.protocol, port: p.port });
  return targets;
}
