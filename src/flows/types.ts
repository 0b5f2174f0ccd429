/**
 * The flow record: what a datapath saw happen to real connections, aggregated. Shared by the
 * producers (the agent's verdict readers for eBPF and nftables, `palisade flows`) and the
 * consumers (staged-policy evaluation, `palisade suggest`, serve's flow views), so a flow file
 * written by one is read by every other. On the wire and in files it is one JSON object per line
 * (NDJSON) with exactly these fields.
 */
import type { TierName } from '../semantics/types.ts';

export type FlowProtocol = 'TCP' | 'UDP' | 'SCTP';

/** One end of a flow: always its address; the pod (`ns/name`) when the address is a known pod's. */
export interface FlowEndpoint {
  readonly ip: string;
  readonly pod?: string;
  /** The pod's labels and its namespace's labels when known — what a suggestion selects by. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly namespaceLabels?: Readonly<Record<string, string>>;
}

/**
 * The rule that decided one side of a flow, in the reference evaluator's words (a `TierStep`
 * that decided): the same names `check` prints for that connection.
 */
export interface DecidingRule {
  readonly direction: 'egress' | 'ingress';
  readonly tier: TierName;
  readonly outcome: 'allow' | 'deny' | 'no-match' | 'not-isolated';
  /** `ns/name` for NetworkPolicy, `anp/name`, `banp/default`, `cnp/name`. */
  readonly policy?: string;
  /** Index of the rule in its policy's ingress or egress list. */
  readonly rule?: number;
  readonly ruleName?: string;
  /**
   * A NetworkPolicy deny (isolated, and no rule allowed it): the policies that isolate the pod in
   * this direction (none when it is the namespace's legacy DefaultDeny).
   */
  readonly isolatedBy?: readonly string[];
}

export type FlowVerdict = 'allowed' | 'denied';

/** New connections from `src` to `dst:port/protocol`, aggregated over a window. */
export interface FlowRecord {
  readonly src: FlowEndpoint;
  readonly dst: FlowEndpoint;
  readonly protocol: FlowProtocol;
  readonly port: number;
  readonly verdict: FlowVerdict;
  /** What decided each side that was subject to policy (empty when neither was). */
  readonly decidedBy: readonly DecidingRule[];
  /** New connections seen (sampled counts are scaled back up; `sampled` says so). */
  readonly count: number;
  readonly sampled?: boolean;
  /** ISO 8601 times of the first and last connection in this record. */
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** The node whose datapath reported it. */
  readonly node?: string;
  /** For a staged (audit-mode) policy set: what it would have decided instead. */
  readonly staged?: { readonly verdict: FlowVerdict; readonly decidedBy: readonly DecidingRule[] };
  /**
   * Set when the reference evaluator, over the state the node had realized, decides the
   * connection differently from what the kernel did (a policy update in flight, or a bug): what
   * differed, in one line. `decidedBy` is the evaluator's; `verdict` is always the kernel's.
   */
  readonly mismatch?: string;
}

/**
 * New connections as a datapath's kernel side reported them, before the agent names what decided
 * them: the packet's addresses and ports, the kernel's verdict, the sides this node judged (its
 * own pods' egress or ingress) and, for a drop, which of them dropped. Producers: the nftables
 * datapath's nflog reader (one event per connection), the eBPF datapath's reader of the flow
 * counts (one event per kind of connection counted in the kernel: `weight` of them, without
 * their source ports).
 */
export interface VerdictEvent {
  /** Milliseconds since the epoch: when the agent read it, or the kernel saw the last one. */
  readonly at: number;
  /** When the kernel saw the first of the connections it stands for (default `at`). */
  readonly firstAt?: number;
  readonly protocol: FlowProtocol;
  readonly src: string;
  readonly dst: string;
  /** The source port when the datapath reports connections one by one (nftables). */
  readonly srcPort?: number;
  readonly port: number;
  readonly verdict: FlowVerdict;
  /** The side whose policy dropped the packet (denied only). */
  readonly deniedBy?: 'egress' | 'ingress';
  /**
   * What the kernel says decided, in its own terms (eBPF: tier and rule slot of the deciding
   * table, `tier:slot`; nftables: the stage the packet stopped at), for diagnostics.
   */
  readonly kernel?: string;
  /** How many connections this event stands for (default 1). */
  readonly weight?: number;
  /** Some of them were sampled (under load, one in N counted N times): `weight` is an estimate. */
  readonly sampled?: boolean;
}

/** What selects flows: every given field must match (a pod matches `ns/name` or `ns/`). */
export interface FlowFilter {
  readonly from?: string;
  readonly to?: string;
  /** Either end. */
  readonly pod?: string;
  readonly namespace?: string;
  readonly verdict?: FlowVerdict;
  readonly protocol?: FlowProtocol;
  readonly port?: number;
  /** `ns/name`, `anp/name`, … as in `DecidingRule.policy`. */
  readonly policy?: string;
  readonly node?: string;
  /** Only flows whose verdict the staged policies would change (`staged` set on the record). */
  readonly staged?: boolean;
}
