/**
 * The node agent (the seed's policy plugin, run continuously on every node): it lists the
 * reflected objects, watches from the list's revision, and drives every change through the
 * incremental pipeline scoped to its node into its datapath.
 *
 * - Start-up: the datapath reads what the node holds and enforces it meanwhile (or fails
 *   closed); the first snapshot is rendered whole and realized as one difference from that —
 *   until then `/readyz` says not ready ("The Resync procedure … waits").
 * - Changes: watch events queue up while a realization runs and go through as one batch, so
 *   a burst costs one transaction per realization, not one per event.
 * - Compaction: the watch reports it; the agent lists again and applies only what differs
 *   (its mirror compares modification revisions), then watches from the new list's revision.
 * - Failures: a realization that throws (nft refused, the namespace vanished, etcd refused a
 *   document write) is retried with exponential backoff; the datapath's own guarantees keep
 *   the node at the old state or the new one, never between.
 * - Status: a key bound to the agent's lease (status.ts), rewritten at most every
 *   `statusIntervalMs` while things change; a lost lease is granted again.
 * - Stop: the running realization finishes, the lease is revoked (the status key goes), the
 *   registration says it stopped, and the datapath keeps enforcing what it holds.
 *
 * One pump runs at a time (`pump`), so the pipeline and the datapath are never entered twice.
 */
import type { EtcdWatch, EtcdEvent, Lease } from '../etcd/types.ts';
import { PolicyPipeline } from '../pipeline/index.ts';
import { ClusterMirror, type KeyChange } from './mirror.ts';
import { StatusKeys } from './status.ts';
import type {
  AgentLog,
  AgentMetrics,
  AgentOptions,
  AgentRegistration,
  AgentState,
  DatapathCounts,
  StatusRecord,
} from './types.ts';

const NO_COUNTS: DatapathCounts = { tables: 0, rules: 0, sets: 0 };

const silent: AgentLog = { debug() {}, info() {}, warn() {}, error() {} };

export class NodeAgent {
  private readonly mirror: ClusterMirror;
  private readonly pipeline: PolicyPipeline;
  private readonly keys: StatusKeys;
  private readonly log: AgentLog;
  private readonly metrics: AgentMetrics | undefined;
  private readonly startedAt = new Date().toISOString();

  private phase: AgentState['phase'] = 'starting';
  private stale = false;
  private realizedRevision = 0;
  private seenRevision = 0;
  private counts: DatapathCounts = NO_COUNTS;
  private lastError: { message: string; at: string } | undefined;
  private resyncs = 0;

  /** Key changes received and not yet applied, and the revision they bring the agent to. */
  private pending: KeyChange[] = [];
  private pendingRevision = 0;
  /** The first snapshot has not been realized yet. */
  private first = true;
  /** A realization failed: the datapath must be brought to the pipeline's state again. */
  private unrealized = false;
  private needsRelist = false;
  private watch: EtcdWatch | undefined;
  private lease: Lease | undefined;
  private pumping: Promise<void> | undefined;
  private stopped = false;
  private failures = 0;
  private lastContact = Date.now();
  /** When the status lease was last granted or kept alive. */
  private leaseAliveAt = Date.now();
  private readonly timers = new Set<NodeJS.Timeout>();
  private statusDue: NodeJS.Timeout | undefined;
  private lastStatusWrite = 0;
  private staleTimer: NodeJS.Timeout | undefined;
  private leaseRetry: NodeJS.Timeout | undefined;
  private readonly stoppedWaiters: (() => void)[] = [];

  constructor(private readonly options: AgentOptions) {
    this.keys = new StatusKeys(options.layout);
    this.log = options.log ?? silent;
    this.metrics = options.metrics;
    this.mirror = new ClusterMirror({
      layout: options.layout,
      ...(options.allPolicies ? {} : { node: options.node }),
      onDiagnostics: (diagnostics) => {
        for (const d of diagnostics)
          if (d.severity === 'error')
            this.log.warn({ code: d.code, key: d.file, object: d.object }, `left out: ${d.message}`);
      },
    });
    this.pipeline = new PolicyPipeline({
      state: options.state,
      renderers: [options.datapath.renderer],
      node: options.node,
    });
  }

  /** What /readyz, metrics and tests see. */
  get state(): AgentState {
    return {
      node: this.options.node,
      datapath: this.options.datapath.name,
      phase: this.phase,
      stale: this.stale,
      realizedRevision: this.realizedRevision,
      seenRevision: this.seenRevision,
      counts: this.counts,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      resyncs: this.resyncs,
    };
  }

  /** Ready: the first snapshot is realized and the last realization succeeded. */
  get ready(): boolean {
    return this.phase === 'ready';
  }

  /**
   * Registers, prepares the datapath, lists and starts watching. Returns once the watch runs;
   * the first snapshot is realized in the background (`whenRealized` waits for a revision).
   */
  async start(): Promise<void> {
    const { store, layout, datapath } = this.options;
    await this.register();
    this.log.info({ datapath: datapath.name }, await datapath.prepare());
    this.counts = datapath.counts();
    await this.grantLease();
    const listed = await store.range(layout.objects);
    this.contact();
    this.seenRevision = listed.revision;
    this.pending = this.mirror.relist(listed.kvs);
    this.pendingRevision = listed.revision;
    this.log.info(
      { keys: listed.kvs.length, revision: listed.revision },
      'listed the reflected objects; rendering the first snapshot',
    );
    await this.startWatch(listed.revision + 1);
    this.staleTimer = setInterval(() => this.checkStale(), Math.min(1000, this.staleAfterMs / 2));
    this.kick();
  }

  /** Resolves when the datapath holds a revision at least `revision` (tests, the lab). */
  async whenRealized(revision: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.realizedRevision < revision || this.phase !== 'ready') {
      if (Date.now() > deadline)
        throw new Error(
          `${this.options.node}: revision ${revision} not realized within ${timeoutMs} ms (at ${this.realizedRevision}, ${this.phase}${this.lastError ? `: ${this.lastError.message}` : ''})`,
        );
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Resolves when the agent has stopped. */
  stoppedPromise(): Promise<void> {
    return this.stopped && !this.pumping
      ? Promise.resolve()
      : new Promise((resolve) => this.stoppedWaiters.push(resolve));
  }

  /**
   * Graceful stop: no new work, the running realization finishes, the lease is revoked (the
   * status key goes with it) and the registration records the stop. The datapath keeps what it
   * holds (`--cleanup` removes it).
   */
  async stop(): Promise<void> {
    if (this.stopped) return this.stoppedPromise();
    this.stopped = true;
    this.phase = 'stopping';
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.statusDue) clearTimeout(this.statusDue);
    if (this.staleTimer) clearInterval(this.staleTimer);
    if (this.leaseRetry) clearTimeout(this.leaseRetry);
    await this.watch?.cancel().catch(() => undefined);
    await this.pumping;
    const lease = this.lease;
    this.lease = undefined;
    try {
      await withTimeout(lease?.revoke() ?? Promise.resolve(), 2000);
      await withTimeout(
        this.options.store.txn(
          [],
          [
            {
              type: 'put',
              key: this.keys.agent(this.options.node),
              value: JSON.stringify(this.registration(true)),
            },
          ],
        ),
        2000,
      );
    } catch (error) {
      this.log.warn(
        { error: message(error) },
        'could not record the stop in etcd (the lease expires by itself)',
      );
    }
    await this.options.datapath.close();
    this.log.info({ revision: this.realizedRevision }, 'stopped; the datapath keeps enforcing what it holds');
    for (const resolve of this.stoppedWaiters.splice(0)) resolve();
  }

  private get staleAfterMs(): number {
    return this.options.staleAfterMs ?? (this.options.leaseTtlSeconds ?? 10) * 1000;
  }

  private async startWatch(from: number): Promise<void> {
    const { store, layout } = this.options;
    this.watch = await store.watch(
      layout.objects,
      from,
      {
        onEvents: (events, revision) => this.received(events, revision),
        onCompacted: (compactRevision) => {
          this.log.warn(
            { compactRevision, at: this.pendingRevision },
            'watch revision compacted: listing again',
          );
          this.watch = undefined;
          this.needsRelist = true;
          this.kick();
        },
        onProgress: (revision) => {
          this.contact();
          this.seenRevision = Math.max(this.seenRevision, revision);
        },
        onRetry: (error) => this.log.warn({ error: message(error) }, 'watch broken; resuming'),
      },
      // The objects and the reflector's records (its resourceVersions, written with every batch,
      // deletes included): what `palisade status` compares realized revisions with.
      { end: prefixEnd(layout.resourceVersions) },
    );
  }

  private received(events: readonly EtcdEvent[], revision: number): void {
    this.contact();
    this.metrics?.eventsReceived(events.length);
    for (const e of events)
      this.pending.push(
        e.type === 'put'
          ? { key: e.key, value: e.value, modRevision: e.modRevision }
          : { key: e.key, value: undefined, modRevision: e.modRevision },
      );
    this.pendingRevision = Math.max(this.pendingRevision, revision);
    this.seenRevision = Math.max(this.seenRevision, revision);
    this.metrics?.revisions(this.seenRevision, this.realizedRevision);
    this.kick();
  }

  /** Runs the pump unless it runs already (it picks up whatever arrived meanwhile). */
  private kick(): void {
    if (this.pumping || this.stopped) return;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.stopped) for (const resolve of this.stoppedWaiters.splice(0)) resolve();
    });
  }

  private async pump(): Promise<void> {
    try {
      while (!this.stopped) {
        if (this.needsRelist) await this.relist();
        else if (this.pending.length > 0 || this.unrealized || this.first) await this.realizeBatch();
        else if (this.pendingRevision > this.realizedRevision) this.realized(this.pendingRevision);
        else break;
      }
    } catch (error) {
      this.failed(error);
    }
  }

  /** Lists again after compaction: only what differs from the mirror goes through the pipeline. */
  private async relist(): Promise<void> {
    const listed = await this.options.store.range(this.options.layout.objects);
    this.contact();
    this.pending = this.mirror.relist(listed.kvs);
    this.pendingRevision = listed.revision;
    this.seenRevision = Math.max(this.seenRevision, listed.revision);
    this.needsRelist = false;
    this.resyncs++;
    this.metrics?.resynced();
    this.log.info(
      { revision: listed.revision, changes: this.pending.length },
      'listed again after compaction',
    );
    await this.startWatch(listed.revision + 1);
  }

  private async realizeBatch(): Promise<void> {
    const changes = this.pending;
    const revision = this.pendingRevision;
    this.pending = [];
    const started = performance.now();
    const pipelineChanges = this.mirror.apply(changes);
    const first = this.first;
    // Whatever happens below, the pipeline now holds the new state: a failure leaves only the
    // datapath to bring there (`unrealized`), from what it reads back.
    this.unrealized = true;
    if (first) this.pipeline.apply({ type: 'resync', cluster: this.mirror.snapshot() });
    else if (pipelineChanges.length > 0) this.pipeline.applyBatch(pipelineChanges);
    const rendered = performance.now();
    await this.options.datapath.realize(first);
    const done = performance.now();
    this.unrealized = false;
    this.first = false;
    this.failures = 0;
    this.metrics?.pipelineSeconds((rendered - started) / 1000);
    this.metrics?.renderSeconds((done - rendered) / 1000);
    this.counts = this.options.datapath.counts();
    this.metrics?.counts(this.counts);
    if (first || this.phase !== 'ready')
      this.log.info(
        { revision, ms: Math.round(done - started), ...this.counts },
        first ? 'first snapshot realized: ready' : 'realized again: ready',
      );
    else this.log.debug({ revision, changes: changes.length, ms: Math.round(done - started) }, 'realized');
    this.phase = 'ready';
    this.realized(revision);
  }

  private realized(revision: number): void {
    this.realizedRevision = Math.max(this.realizedRevision, revision);
    this.metrics?.revisions(this.seenRevision, this.realizedRevision);
    this.metrics?.state(this.ready, this.stale);
    this.scheduleStatus();
    this.options.onRealized?.(this.realizedRevision);
  }

  /** A failed realization or read: recorded, reported, and retried with backoff. */
  private failed(error: unknown): void {
    this.failures++;
    const text = message(error);
    this.lastError = { message: text, at: new Date().toISOString() };
    if (!this.first) this.phase = 'failing';
    this.metrics?.transactionFailed();
    this.metrics?.state(this.ready, this.stale);
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 100, maxMs: 5000 };
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures - 1, 20));
    this.log.error({ error: text, retryInMs: delay, failures: this.failures }, 'realization failed');
    this.scheduleStatus();
    this.later(delay, () => this.kick());
  }

  private later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  private contact(): void {
    this.lastContact = Date.now();
    if (this.stale) this.checkStale();
  }

  private checkStale(): void {
    this.checkLease();
    const stale = Date.now() - this.lastContact > this.staleAfterMs;
    if (stale === this.stale) return;
    this.stale = stale;
    this.metrics?.state(this.ready, stale);
    if (stale)
      this.log.warn(
        { sinceMs: Date.now() - this.lastContact },
        'no contact with etcd: what is enforced may be stale',
      );
    else this.log.info({}, 'in contact with etcd again');
    this.scheduleStatus();
  }

  /**
   * A lease without a keepalive for longer than its TTL has expired in etcd, whatever the
   * client says (its keepalive loop can stall on a connection that came back): grant another,
   * so the status key comes back as soon as etcd answers.
   */
  private checkLease(): void {
    const lease = this.lease;
    const ttlMs = (this.options.leaseTtlSeconds ?? 10) * 1000;
    if (!lease || this.stopped || Date.now() - this.leaseAliveAt <= ttlMs * 1.5) return;
    this.lease = undefined;
    this.log.warn(
      { sinceMs: Date.now() - this.leaseAliveAt },
      'status lease not kept alive for longer than its TTL; granting another',
    );
    void lease.revoke().catch(() => undefined);
    this.retryLease(0);
  }

  private registration(stopped = false): AgentRegistration {
    return {
      node: this.options.node,
      datapath: this.options.datapath.name,
      version: this.options.version,
      startedAt: this.startedAt,
      ...(stopped ? { stoppedAt: new Date().toISOString() } : {}),
    };
  }

  private async register(): Promise<void> {
    await this.options.store.txn(
      [],
      [{ type: 'put', key: this.keys.agent(this.options.node), value: JSON.stringify(this.registration()) }],
    );
  }

  /** Grants the status lease (again, after losing it), retrying with backoff until it holds. */
  private async grantLease(): Promise<void> {
    const ttl = this.options.leaseTtlSeconds ?? 10;
    const lease = await this.options.store.grantLease(ttl);
    if (this.stopped) return void (await lease.revoke().catch(() => undefined));
    this.lease = lease;
    this.leaseAliveAt = Date.now();
    lease.onKeepAlive(() => {
      this.leaseAliveAt = Date.now();
      this.contact();
    });
    lease.onLost((error) => {
      if (this.lease !== lease || this.stopped) return;
      this.lease = undefined;
      this.log.warn({ error: message(error) }, 'status lease lost; granting another');
      this.retryLease(500);
    });
    await this.writeStatus();
  }

  private retryLease(delay: number): void {
    if (this.leaseRetry) clearTimeout(this.leaseRetry);
    this.leaseRetry = setTimeout(() => {
      this.grantLease().catch((error: unknown) => {
        const next = Math.min(Math.max(delay * 2, 250), 5000);
        this.log.debug({ error: message(error), retryInMs: next }, 'granting the status lease failed');
        this.retryLease(next);
      });
    }, delay);
  }

  /** Writes the status key now, or as soon as `statusIntervalMs` has passed since the last write. */
  private scheduleStatus(): void {
    if (this.statusDue || this.stopped) return;
    const interval = this.options.statusIntervalMs ?? 1000;
    const wait = Math.max(0, this.lastStatusWrite + interval - Date.now());
    this.statusDue = setTimeout(() => {
      this.statusDue = undefined;
      this.writeStatus().catch((error: unknown) => {
        this.log.debug({ error: message(error) }, 'status write failed; retrying');
        this.later(interval, () => this.scheduleStatus());
      });
    }, wait);
  }

  private async writeStatus(): Promise<void> {
    const lease = this.lease;
    if (!lease || this.stopped) return;
    this.lastStatusWrite = Date.now();
    const record: StatusRecord = {
      ...this.state,
      version: this.options.version,
      pid: process.pid,
      startedAt: this.startedAt,
      updatedAt: new Date().toISOString(),
    };
    await this.options.store.txn(
      [],
      [
        {
          type: 'put',
          key: this.keys.node(this.options.node),
          value: JSON.stringify(record),
          lease: lease.id,
        },
      ],
    );
  }
}

/** The smallest key after every key starting with `prefix` (etcd's prefix range end). */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
