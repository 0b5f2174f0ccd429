/**
 * Contracts of the node agent: how it hands batches to the datapath it opened through the
 * datapaths registry (the Realizer), and what it reports (status in etcd, metrics, logs).
 */
import type { EtcdStore } from '../etcd/types.ts';
import type { KeyLayout } from '../reflected/index.ts';
import type { DatapathCounts } from '../datapaths/types.ts';
import type { FlowRecord } from '../flows/types.ts';

/** Log lines, structured (pino's shape, so pino is one implementation). */
export interface AgentLog {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** A key whose value cannot be read (the mirror's record), as the agent reports it. */
export type { UnreadableKey } from './mirror.ts';
import type { KeyChange, UnreadableKey } from './mirror.ts';

/** New connections' verdicts since the last call, and how many the kernel or reader lost. */
export interface FlowBatch {
  readonly records: readonly FlowRecord[];
  /** Lost since the start (the reader's count). */
  readonly lost: number;
  /** The datapath holds reports a later batch gives (`NodeDatapath.flowsPending`). */
  readonly pending?: boolean;
}

/** What one realization did. */
export interface RealizeResult {
  readonly counts: DatapathCounts;
  /** Keys whose value cannot be read (the agent is degraded while any is): the first 20. */
  readonly unreadable: readonly UnreadableKey[];
  readonly unreadableCount: number;
  /** Values found unreadable by this batch, to log (the first 100). */
  readonly found: readonly UnreadableKey[];
  /** Bringing the mirror, store and compiled tables to the batch, ms. */
  readonly pipelineMs: number;
  /** Realizing the batch in the datapath after that, ms. */
  readonly realizeMs: number;
  /** Whether this was the first snapshot (or a rebuild after an internal error). */
  readonly first: boolean;
}

/**
 * The agent's heavy side: its mirror of the reflected objects, the node-scoped pipeline and the
 * datapath (realizer.ts). The agent keeps etcd, health and status on its own event loop and hands
 * batches to a realizer, in this thread (tests) or a worker thread (`palisade agent`), so a large
 * change never starves /healthz or the status lease.
 */
export interface Realizer {
  /** The datapath's `--datapath` name. */
  readonly datapath: string;
  /** What the node enforces until the first snapshot is realized, in one line. */
  prepare(): Promise<string>;
  /**
   * Brings the datapath to the key changes (or, with `relist`, to a whole listing). Throws when
   * it could not; the same changes may be given again (they are applied once). A thrown error
   * with `relist: true` says the realizer must be given a whole listing next.
   */
  realize(changes: readonly KeyChange[], relist: boolean): Promise<RealizeResult>;
  /**
   * Verifies the datapath against what was last realized and repairs any difference in one
   * transaction; returns what differed (empty: nothing), or undefined when nothing was verified
   * (no realization yet, one failed, or a worker to start again). Throws when it could not.
   */
  reconcile(): Promise<readonly string[] | undefined>;
  /** Told when the datapath's notifications say others may have changed it. */
  onSuspect(listener: (why: string) => void): void;
  /**
   * With the flow log on: the new connections' verdicts the datapath reported since the last
   * call, attributed (the policy, rule and tier that decided each side judged here). Absent:
   * the realizer reports none.
   */
  flows?(): Promise<FlowBatch>;
  cleanup(): Promise<string>;
  close(): Promise<void>;
}

/** What the agent counts and times (prom-client is one implementation; tests pass none). */
export interface AgentMetrics {
  eventsReceived(count: number): void;
  /** The store's revision as last seen, and the revision realized. */
  revisions(seen: number, realized: number): void;
  pipelineSeconds(seconds: number): void;
  renderSeconds(seconds: number): void;
  transactionFailed(): void;
  resynced(): void;
  counts(counts: DatapathCounts): void;
  state(ready: boolean, stale: boolean): void;
  /** A difference between the datapath and what was realized was found and repaired. */
  driftRepaired(): void;
  /** Keys whose value cannot be read, now. */
  unreadable(count: number): void;
}

/** The agent's state as /readyz, the status key and tests see it. */
export interface AgentState {
  readonly node: string;
  readonly datapath: string;
  /**
   * starting: no snapshot realized yet; ready: realized; degraded: realized, but some keys cannot
   * be read (their last good version, or a fail-closed stand-in, is enforced — `unreadable`);
   * failing: the last realization (or verification) failed; stopping.
   */
  readonly phase: 'starting' | 'ready' | 'degraded' | 'failing' | 'stopping';
  /** No contact with etcd for longer than `staleAfterMs`: what is enforced may be out of date. */
  readonly stale: boolean;
  /** The etcd revision whose state the datapath holds (0 before the first snapshot). */
  readonly realizedRevision: number;
  /** The latest etcd revision the agent has seen. */
  readonly seenRevision: number;
  readonly counts: DatapathCounts;
  /** The last failure, while failing (cleared when a realization succeeds again). */
  readonly lastError?: { readonly message: string; readonly at: string };
  /** Full resyncs after the first (compaction). */
  readonly resyncs: number;
  /** Keys whose value cannot be read (at most 20 listed; `unreadableCount` counts all). */
  readonly unreadable: readonly UnreadableKey[];
  readonly unreadableCount: number;
  /** Differences between the datapath and what was realized, found and repaired since start. */
  readonly driftRepairs: number;
  /** The last such repair: what differed. */
  readonly lastDrift?: { readonly what: string; readonly at: string };
}

/** The value of an agent's status key (`<root>/v1/status/nodes/<node>`, bound to its lease). */
export interface StatusRecord extends Omit<
  AgentState,
  'lastError' | 'unreadable' | 'unreadableCount' | 'driftRepairs'
> {
  readonly version: string;
  readonly pid: number;
  readonly startedAt: string;
  readonly updatedAt: string;
  readonly lastError?: { readonly message: string; readonly at: string };
  /** Absent in records an agent older than these fields wrote. */
  readonly unreadable?: AgentState['unreadable'];
  readonly unreadableCount?: number;
  readonly driftRepairs?: number;
}

/** The persistent registration of an agent (`<root>/v1/status/agents/<node>`): outlives its lease. */
export interface AgentRegistration {
  readonly node: string;
  readonly datapath: string;
  readonly version: string;
  readonly startedAt: string;
  /** Set by a graceful stop: the agent is gone on purpose, not dead. */
  readonly stoppedAt?: string;
}

export interface AgentOptions {
  readonly node: string;
  readonly store: EtcdStore;
  readonly layout: KeyLayout;
  /** The mirror, pipeline and datapath (in this thread or a worker). */
  readonly realizer: Realizer;
  readonly version: string;
  readonly log?: AgentLog;
  readonly metrics?: AgentMetrics;
  /** Status key lease, seconds (default 10): a dead agent's status disappears this long after. */
  readonly leaseTtlSeconds?: number;
  /** Least time between two status writes while changes flow, ms (default 1000). */
  readonly statusIntervalMs?: number;
  /** No contact with etcd for this long makes the agent stale, ms (default: the lease TTL). */
  readonly staleAfterMs?: number;
  /** Retry backoff of failed transactions and etcd reads, ms (default 100 doubling to 5000). */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /** How often the datapath is verified against what was realized, ms (default 5000; 0: never). */
  readonly verifyIntervalMs?: number;
  /** Called after every realization (tests, benchmarks): the revision now enforced. */
  readonly onRealized?: (revision: number) => void;
  /**
   * Awaited after the datapath is prepared and before the first listing: the store holds the
   * whole cluster once it resolves (direct mode: every informer has listed; kube-source.ts).
   */
  readonly sourceSynced?: () => Promise<void>;
  /** What feeds the store from beyond it (direct mode: the API server); losing it makes the agent stale too. */
  readonly upstream?: Upstream;
}

/**
 * A source beyond the agent's store whose contact decides staleness as etcd's does: in direct
 * mode the store is in-process and always answers, so only the API server's silence can say
 * that what is enforced may be old.
 */
export interface Upstream {
  /** For the log: "the Kubernetes API". */
  readonly what: string;
  /** Since when (epoch ms) it has failed without answering since; undefined while it answers. */
  failingSince(): number | undefined;
}
