/**
 * Contracts of `suggest`: observed connections (from flows or an expectations file, joined with
 * the cluster), the units policies are written for (workloads, or workloads labels cannot tell
 * apart, merged), and the suggestion with its verification.
 */
import type { IpAddress } from '../../net/ip.ts';
import type { Endpoint, Labels, Protocol, SourceLocation } from '../../model/types.ts';

/** One end of an observed connection: a pod (or workload template) of the cluster, or an address. */
export type ObservedSide =
  | { readonly kind: 'endpoint'; readonly endpoint: Endpoint }
  | { readonly kind: 'ip'; readonly ip: IpAddress; readonly text: string };

/** A connection that was seen (or is expected) to be allowed. */
export interface Observation {
  readonly src: ObservedSide;
  readonly dst: ObservedSide;
  readonly protocol: Protocol;
  readonly port: number;
  /** New connections it stands for (1 for an expectation). */
  readonly count: number;
  readonly location?: SourceLocation;
}

/** A connection expected to stay denied (an expectations file's `allowed: false`). */
export interface Prohibition {
  readonly src: ObservedSide;
  readonly dst: ObservedSide;
  readonly protocol: Protocol;
  readonly port: number;
  readonly location?: SourceLocation;
}

/**
 * What a policy is written for: the pods of one workload, selected by the labels a person would
 * pick — or, where no labels tell several workloads apart, all of them under one selector (the
 * generalisation is reported).
 */
export interface Unit {
  readonly id: number;
  readonly namespace: string;
  /** Workload rows it stands for (`ns/name[Kind]`), sorted; more than one when merged. */
  readonly workloads: readonly string[];
  /** A name for its policy: the (first) workload's name. */
  readonly name: string;
  readonly members: readonly Endpoint[];
  /** matchLabels selecting exactly `members` among the namespace's pods; empty selects all of them. */
  readonly selector: Labels;
}

export interface SuggestOptions {
  /** Namespaces to write policy for (isolate); default: every namespace with pods. */
  readonly namespaces?: readonly string[];
  /** Keep DNS to kube-dns (kube-system, `k8s-app=kube-dns`, 53 UDP and TCP) working. Default true. */
  readonly dns?: boolean;
}

/** One thing the suggestion allows beyond the connections seen, said for a reviewer. */
export interface Generalisation {
  readonly kind: 'workload' | 'merged' | 'dns' | 'namespace-wide';
  readonly text: string;
}

/** A pair of pods whose allowed ports under the suggestion differ from those expected. */
export interface Mismatch {
  readonly from: string;
  readonly to: string;
  /** Allowed by the suggestion but not observed (at the granularity). */
  readonly extra: string;
  /** Observed but not allowed by the suggestion. */
  readonly missing: string;
}

export interface Verification {
  /** True when every pod pair in scope gets exactly the expected ports. */
  readonly exact: boolean;
  readonly mismatches: readonly Mismatch[];
  /** Prohibitions (allowed: false) the suggestion allows after all. */
  readonly violated: readonly string[];
  readonly endpoints: number;
  readonly classes: number;
  readonly millis: number;
}

export interface Suggestion {
  /** NetworkPolicy objects, as plain JSON, in output order. */
  readonly policies: readonly SuggestedPolicy[];
  readonly units: readonly Unit[];
  readonly generalised: readonly Generalisation[];
  readonly verification: Verification;
  readonly observations: number;
  readonly connections: number;
  /** The namespaces written for; `scoped` when -n chose them (the others stay open). */
  readonly namespaces: readonly string[];
  readonly scoped: boolean;
  /** The input's tiered policies (AdminNetworkPolicy…, Calico's, Cilium's: `Cluster.clusterPolicies`), left out of the check. */
  readonly clusterPoliciesLeftOut: number;
}

export interface SuggestedPolicy {
  /** A comment for a reviewer: what it is for. */
  readonly comment: string;
  readonly object: Readonly<Record<string, unknown>>;
}
