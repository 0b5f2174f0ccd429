/**
 * Contracts of the reference evaluator: a connection between two addresses and the verdict, with
 * the explanation people read (`check`, `explain`) and tools consume (`-o json`).
 */
import type { IpAddress, IpFamily } from '../net/ip.ts';
import type { Endpoint, Protocol, Semantics } from '../model/types.ts';

/** One side of a connection: an endpoint of the cluster, or a plain IP (outside, or a node). */
export type Address =
  | { readonly kind: 'endpoint'; readonly endpoint: Endpoint }
  | {
      readonly kind: 'ip';
      readonly ip: IpAddress;
      /** Set when the IP is a node's address. */ readonly node?: string;
      /** The domain name the user gave for this IP (`example.com=203.0.113.7`), for domainNames peers. */
      readonly domain?: string;
    };

export interface Connection {
  readonly src: Address;
  readonly dst: Address;
  readonly protocol: Protocol;
  /** Destination port (1-65535). */
  readonly port: number;
  /** Evaluate this address family only (a packet has one); default: every family both sides share. */
  readonly family?: IpFamily;
}

export interface EvaluateOptions {
  /** Default `v1`. */
  readonly semantics?: Semantics;
  /**
   * Traffic between a pod and its own node is always allowed (Kubernetes documents that pods
   * cannot block their node, e.g. kubelet probes). Default true.
   */
  readonly allowNodeLocal?: boolean;
}

/** A rule that allowed the connection. */
export interface RuleMatch {
  readonly policy: string;
  readonly rule: number;
  readonly peer?: number;
  readonly port?: number;
  /** How to name the rule when not `ingress[rule]`/`egress[rule]` (Cilium's `ingressDeny[0]`). */
  readonly label?: string;
}

/** A rule of a selecting policy that did not allow the connection, and why. */
export interface RuleMiss {
  readonly policy: string;
  readonly rule: number;
  readonly reason: string;
  /** How to name the rule when not `ingress[rule]`/`egress[rule]` (Cilium's `ingressDeny[0]`). */
  readonly label?: string;
}

export type SideStatus =
  | 'not-applicable' // this side is outside the cluster
  | 'host-network' // hostNetwork pods are not subject to NetworkPolicy
  | 'pseudo-peer' // the ingress controller: its own policy is not in the input
  | 'node-local' // traffic between a pod and its own node
  | 'not-isolated' // no policy selects the pod for this direction
  | 'namespace-not-isolated' // v1beta1 proposal: the namespace has no DefaultDeny
  | 'egress-not-modelled' // v1beta1 proposal: there is no egress policy
  | 'allowed-by-rule'
  | 'no-rule-matched'
  | 'allowed-by-admin' // an Admin-tier Allow/Accept rule decided
  | 'denied-by-admin' // an Admin-tier Deny rule (or a fail-closed rule) decided
  | 'allowed-by-baseline'
  | 'denied-by-baseline'
  | 'allowed-by-tier' // a rule of a Calico tier decided
  | 'denied-by-tier' // a rule of a Calico tier, or the tier's default action, decided
  | 'denied-by-rule'; // a deny rule where NetworkPolicy sits (Cilium's, Calico's default tier)

/**
 * The tiers a direction is evaluated in, in order: `Admin`, Calico's tiers by their order, the
 * tier NetworkPolicy is in (`NetworkPolicy` when only NetworkPolicies select the pod there,
 * `default` when Calico's or Cilium's policies do too), `Baseline`, `Profiles`, and `Default`
 * (what no tier decided: allowed).
 */
export type TierName = string;

/** The last step of a walk no tier decided (allowed): a name in the walk's data, never shown as a tier. */
export const AFTER_EVERY_TIER: TierName = 'Default';

/**
 * One tier's part in a side's verdict: which policy and rule decided, passed, or that nothing
 * matched there. The walk of a side lists the tiers visited until one decided.
 */
export interface TierStep {
  readonly tier: TierName;
  readonly outcome: 'allow' | 'deny' | 'pass' | 'no-match' | 'not-isolated';
  /** `anp/name`, `cnp/name`, `banp/default`, or `ns/name` for NetworkPolicy. */
  readonly policy?: string;
  /** Index of the deciding rule in its policy's ingress or egress list. */
  readonly rule?: number;
  readonly ruleName?: string;
  /** How to name the deciding rule when not `ingress[rule]`/`egress[rule]` (`ingressDeny[0]`). */
  readonly ruleLabel?: string;
  /** The deciding policy's Calico order (Calico's policies only). */
  readonly order?: number;
  /** The tier's default action decided: it applies to the pod, and no rule of it matched. */
  readonly endOfTier?: boolean;
  /**
   * How people are shown the tier where its name would mislead: NetworkPolicy's place holding
   * Cilium's policies and no Calico's is no tier of Calico's (`Cilium`), and its end is Cilium's
   * default deny; with Calico's policies in the input, it is Calico's `default` tier.
   */
  readonly shownAs?: string;
  /**
   * Policies of this tier that select the endpoint for this direction; at the end of the tier
   * (`endOfTier`), those that hold it there (isolate it).
   */
  readonly policies: readonly string[];
}

/** The verdict of one direction: egress from the source, or ingress into the destination. */
export interface SideVerdict {
  readonly direction: 'egress' | 'ingress';
  /** The endpoint whose policies decide this side, when it is one. */
  readonly endpoint?: string;
  readonly status: SideStatus;
  readonly allowed: boolean;
  readonly isolated: boolean;
  /** Policies that select the endpoint for this direction (`ns/name`). */
  readonly policies: readonly string[];
  readonly matches: readonly RuleMatch[];
  readonly misses: readonly RuleMiss[];
  /** The tiers visited, in order (empty when the side is not subject to policy at all). */
  readonly walk: readonly TierStep[];
  /** One sentence for people. */
  readonly reason: string;
}

export interface Verdict {
  readonly allowed: boolean;
  /** The address family the verdict is for; undefined when neither side has an address. */
  readonly family?: IpFamily;
  readonly egress: SideVerdict;
  readonly ingress: SideVerdict;
  /**
   * Verdicts of the other families of a dual-stack pair (this one is the first denied family's,
   * else the first family's); empty when one family was evaluated.
   */
  readonly otherFamilies: readonly Verdict[];
  readonly notes: readonly string[];
}
