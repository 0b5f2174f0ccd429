/**
 * The agent's Prometheus metrics through prom-client, in a registry of their own (so several
 * agents in one process — the fan-out benchmark — never collide). Loaded only by `palisade
 * agent`: prom-client is imported here and nowhere else.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentMetrics } from './types.ts';
import type { DatapathCounts } from '../datapaths/types.ts';
import type { FlowRecord } from '../flows/types.ts';
import type { FlowTableStats } from '../flows/index.ts';

/** Most distinct `policy` label values of palisade_policy_verdicts_total. */
const MAX_POLICY_LABELS = 200;

/** Latency buckets (seconds): 0.5 ms to 10 s. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class PromMetrics implements AgentMetrics {
  readonly registry = new Registry();
  private readonly events: Counter;
  private readonly seen: Gauge;
  private readonly realized: Gauge;
  private readonly lag: Gauge;
  private readonly pipeline: Histogram;
  private readonly render: Histogram;
  private readonly failures: Counter;
  private readonly resyncs: Counter;
  private readonly objects: Gauge;
  private readonly readyGauge: Gauge;
  private readonly staleGauge: Gauge;
  private readonly driftRepairs: Counter;
  private readonly unreadableGauge: Gauge;
  private readonly verdictCounter: Counter;
  private readonly flowsEvicted: Gauge;
  private readonly flowsLost: Gauge;
  /** Policies given a label of their own so far; the rest count as `other`. */
  private readonly policyLabels = new Set<string>();

  constructor(labels: { node: string; datapath: string }, options: { processMetrics?: boolean } = {}) {
    this.registry.setDefaultLabels(labels);
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.events = new Counter({
      name: 'palisade_agent_events_received_total',
      help: 'etcd watch events received',
      registers,
    });
    this.seen = new Gauge({
      name: 'palisade_agent_seen_revision',
      help: 'the latest etcd revision the agent has seen',
      registers,
    });
    this.realized = new Gauge({
      name: 'palisade_agent_realized_revision',
      help: 'the etcd revision whose state the datapath holds',
      registers,
    });
    this.lag = new Gauge({
      name: 'palisade_agent_lag_revisions',
      help: 'revisions seen but not yet realized',
      registers,
    });
    this.pipeline = new Histogram({
      name: 'palisade_agent_pipeline_seconds',
      help: 'time to bring the pipeline (mirror, store, compiled tables) to a batch of changes',
      buckets: BUCKETS,
      registers,
    });
    this.render = new Histogram({
      name: 'palisade_agent_render_seconds',
      help: 'time to realize a batch in the datapath after the pipeline (documents, first snapshot, retries)',
      buckets: BUCKETS,
      registers,
    });
    this.failures = new Counter({
      name: 'palisade_agent_transaction_failures_total',
      help: 'realizations that failed (and were retried)',
      registers,
    });
    this.resyncs = new Counter({
      name: 'palisade_agent_resyncs_total',
      help: 'full lists after a compacted watch revision',
      registers,
    });
    this.objects = new Gauge({
      name: 'palisade_agent_datapath_objects',
      help: 'what the datapath holds, by kind (tables, rules, sets)',
      labelNames: ['kind'],
      registers,
    });
    this.readyGauge = new Gauge({ name: 'palisade_agent_ready', help: '1 when ready', registers });
    this.staleGauge = new Gauge({
      name: 'palisade_agent_stale',
      help: '1 when out of contact with its source (etcd; in direct mode the Kubernetes API) for longer than the stale limit',
      registers,
    });
    this.driftRepairs = new Counter({
      name: 'palisade_agent_drift_repairs_total',
      help: 'differences between the datapath and what was realized (edits by other writers), found and repaired',
      registers,
    });
    this.unreadableGauge = new Gauge({
      name: 'palisade_agent_unreadable_keys',
      help: 'keys whose value cannot be read (their last good version is enforced; the agent is degraded)',
      registers,
    });
    this.verdictCounter = new Counter({
      name: 'palisade_policy_verdicts_total',
      help: `new connections judged on this node, by side, verdict and deciding policy (the first ${MAX_POLICY_LABELS} policies by name, then "other")`,
      labelNames: ['direction', 'verdict', 'policy'],
      registers,
    });
    this.flowsEvicted = new Gauge({
      name: 'palisade_flow_records_evicted',
      help: 'flow records evicted from the bounded flow table since the start',
      registers,
    });
    this.flowsLost = new Gauge({
      name: 'palisade_flow_events_lost',
      help: 'new-connection reports dropped under load since the start (eBPF: connections the flow counts had no room for; nftables: nflog overruns and stages left unmatched)',
      registers,
    });
  }

  /**
   * New connections' verdicts, by direction, verdict and deciding policy. Label cardinality is
   * bounded: the first `MAX_POLICY_LABELS` policies seen get a label each, later ones count as
   * `other`; a side isolated with no rule allowing the connection is `isolated`, a side no
   * policy decided `none`.
   */
  flowsSeen(records: readonly FlowRecord[], stats: FlowTableStats, lost: number): void {
    for (const record of records) {
      if (record.decidedBy.length === 0)
        this.verdictCounter.inc({ direction: 'none', verdict: record.verdict, policy: 'none' }, record.count);
      // Each side by its own outcome: a side that allowed a connection the other side denied
      // counts as allowed.
      for (const side of record.decidedBy)
        this.verdictCounter.inc(
          {
            direction: side.direction,
            verdict: side.outcome === 'deny' ? 'denied' : 'allowed',
            policy: side.isolatedBy ? 'isolated' : this.policyLabel(side.policy),
          },
          record.count,
        );
    }
    this.flowsEvicted.set(stats.evicted);
    this.flowsLost.set(lost);
  }

  private policyLabel(policy: string | undefined): string {
    if (policy === undefined) return 'none';
    if (this.policyLabels.has(policy)) return policy;
    if (this.policyLabels.size >= MAX_POLICY_LABELS) return 'other';
    this.policyLabels.add(policy);
    return policy;
  }

  eventsReceived(count: number): void {
    this.events.inc(count);
  }
  revisions(seen: number, realized: number): void {
    this.seen.set(seen);
    this.realized.set(realized);
    this.lag.set(Math.max(0, seen - realized));
  }
  pipelineSeconds(seconds: number): void {
    this.pipeline.observe(seconds);
  }
  renderSeconds(seconds: number): void {
    this.render.observe(seconds);
  }
  transactionFailed(): void {
    this.failures.inc();
  }
  resynced(): void {
    this.resyncs.inc();
  }
  counts(counts: DatapathCounts): void {
    this.objects.set({ kind: 'tables' }, counts.tables);
    this.objects.set({ kind: 'rules' }, counts.rules);
    this.objects.set({ kind: 'sets' }, counts.sets);
  }
  state(ready: boolean, stale: boolean): void {
    this.readyGauge.set(ready ? 1 : 0);
    this.staleGauge.set(stale ? 1 : 0);
  }
  driftRepaired(): void {
    this.driftRepairs.inc();
  }
  unreadable(count: number): void {
    this.unreadableGauge.set(count);
  }

  /** The exposition text and its content type. */
  async expose(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
