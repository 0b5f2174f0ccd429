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
 *   the node at the old state or the new one, never between. A batch's changes stay pending
 *   until a realization of them succeeded: nothing is marked realized that was not applied.
 * - Unreadable values: the realizer keeps each such key's last good version (or a fail-closed
 *   stand-in) and lists it; the agent is `degraded` while any is listed, and says so in its
 *   log, status, metrics and /readyz.
 * - Drift (drift.ts): the datapath is verified against what was realized on a timer
 *   (`verifyIntervalMs`) and whenever its notifications suspect another writer; a difference is
 *   logged, counted and repaired in one transaction.
 * - Status: a key bound to the agent's lease (status.ts), rewritten at most every
 *   `statusIntervalMs` while things change; a lost lease is granted again.
 * - Stop: the running realization finishes, the lease is revoked (the status key goes), the
 *   registration says it stopped, and the datapath keeps enforcing what it holds.
 *
 * One pump runs at a time (`pump`), so the realizer is never entered twice. The realizer (the
 * mirror, pipeline and datapath) may run in a worker thread: this loop keeps etcd, the lease and
 * health answering whatever it computes.
 */
import type { EtcdWatch, EtcdEvent } from '../etcd/types.ts';
import type { KeyChange, UnreadableKey } from './mirror.ts';
import { StatusKeys } from './status.ts';
import { ContactTracker } from './contact.ts';
import { StatusLease } from './status-lease.ts';
import { DriftRepair } from './drift.ts';
import type {
  AgentLog,
  AgentMetrics,
  AgentOptions,
  AgentRegistration,
  AgentState,
  RealizeResult,
  StatusRecord,
} from './types.ts';
import type { DatapathCounts } from '../datapaths/types.ts';

const NO_COUNTS: DatapathCounts = { tables: 0, rules: 0, sets: 0 };

const silent: AgentLog = { debug() {}, info() {}, warn() {}, error() {} };

export class NodeAgent {
  private readonly keys: StatusKeys;
  private readonly log: AgentLog;
  private readonly metrics: AgentMetrics | undefined;
  private readonly startedAt = new Date().toISOString();
  private readonly status: StatusLease;
  /** In contact with etcd (and the upstream, in direct mode), or stale. */
  private readonly contact: ContactTracker;
  /** When the datapath is verified, and what a verification repairs and recovers. */
  private readonly drift: DriftRepair;

  private phase: AgentState['phase'] = 'starting';
  private realizedRevision = 0;
  private seenRevision = 0;
  private counts: DatapathCounts = NO_COUNTS;
  private lastError: { message: string; at: string } | undefined;
  private resyncs = 0;
  private unreadable: readonly UnreadableKey[] = [];
  private unreadableCount = 0;

  /**
   * Key changes received and not yet realized, and the revision they bring the agent to. They
   * stay here until a realization of them succeeds (given again, they are applied once).
   */
  private pending: KeyChange[] = [];
  private pendingRevision = 0;
  /** The first snapshot has not been realized yet. */
  private first = true;
  /** A realization failed: the datapath must be brought to the pipeline's state again. */
  private unrealized = false;
  private needsRelist = false;
  private watch: EtcdWatch | undefined;
  private pumping: Promise<void> | undefined;
  /** The first listing is pending (start): nothing may be realized before it. */
  private listing = true;
  private stopped = false;
  private failures = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private staleTimer: NodeJS.Timeout | undefined;
  private readonly stoppedWaiters: (() => void)[] = [];

  constructor(private readonly options: AgentOptions) {
    this.contact = new ContactTracker(this.staleAfterMs, options.upstream);
    this.keys = new StatusKeys(options.layout);
    this.log = options.log ?? silent;
    this.metrics = options.metrics;
    this.status = new StatusLease({
      store: options.store,
      key: this.keys.node(options.node),
      ttlSeconds: options.leaseTtlSeconds ?? 10,
      intervalMs: options.statusIntervalMs ?? 1000,
      log: this.log,
      record: () => this.record(),
      onContact: () => this.touched(),
    });
    this.drift = new DriftRepair({
      realizer: options.realizer,
      verifyIntervalMs: options.verifyIntervalMs ?? 5000,
      log: this.log,
      metrics: this.metrics,
      status: this.status,
      state: () => this.state,
      kick: () => this.kick(),
      relistNeeded: () => {
        this.needsRelist = true;
      },
      recover: (phase) => {
        this.failures = 0;
        this.lastError = undefined;
        this.phase = phase;
      },
    });
  }

  /** What /readyz, metrics and tests see. */
  get state(): AgentState {
    return {
      node: this.options.node,
      datapath: this.options.realizer.datapath,
      phase: this.phase,
      stale: this.contact.stale,
      realizedRevision: this.realizedRevision,
      seenRevision: this.seenRevision,
      counts: this.counts,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      resyncs: this.resyncs,
      unreadable: this.unreadable,
      unreadableCount: this.unreadableCount,
      ...this.drift.state,
    };
  }

  /** Ready: the first snapshot is realized, the last realization succeeded and every key was read. */
  get ready(): boolean {
    return this.phase === 'ready';
  }

  /**
   * Registers, prepares the datapath, lists and starts watching. Returns once the watch runs;
   * the first snapshot is realized in the background (`whenRealized` waits for a revision).
   */
  async start(): Promise<void> {
    const { store, layout, realizer } = this.options;
    await this.register();
    this.log.info({ datapath: realizer.datapath }, await realizer.prepare());
    await this.options.sourceSynced?.();
    await this.status.grant();
    const listed = await store.range(layout.objects);
    this.touched();
    this.seenRevision = listed.revision;
    this.pending = listed.kvs.map((kv) => ({ key: kv.key, value: kv.value, modRevision: kv.modRevision }));
    this.needsRelist = false;
    this.pendingRevision = listed.revision;
    this.log.info(
      { keys: listed.kvs.length, revision: listed.revision },
      'listed the reflected objects; rendering the first snapshot',
    );
    await this.startWatch(listed.revision + 1);
    this.listing = false;
    this.staleTimer = setInterval(() => this.checkStale(), Math.min(1000, this.staleAfterMs / 2));
    this.drift.start();
    this.kick();
  }

  /**
   * Resolves when the datapath holds a revision at least `revision` (tests, the lab) — ready, or
   * degraded (realized, with unreadable keys kept at their last good version).
   */
  async whenRealized(revision: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.realizedRevision < revision || (this.phase !== 'ready' && this.phase !== 'degraded')) {
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
    if (this.staleTimer) clearInterval(this.staleTimer);
    this.drift.stop();
    await this.watch?.cancel().catch(() => undefined);
    await this.pumping;
    try {
      await withTimeout(this.status.stop(), 2000);
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
    await this.options.realizer.close();
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
          this.touched();
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
    this.touched();
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
    if (this.pumping || this.stopped || this.listing) return;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.stopped) for (const resolve of this.stoppedWaiters.splice(0)) resolve();
    });
  }

  private async pump(): Promise<void> {
    try {
      while (!this.stopped) {
        if (this.needsRelist) await this.relist();
        else if (this.pending.length > 0 || this.unrealized || this.first) await this.realizeBatch(false);
        else if (this.drift.due) await this.drift.reconcile();
        else if (this.pendingRevision > this.realizedRevision) this.realized(this.pendingRevision);
        else break;
      }
    } catch (error) {
      this.failed(error);
    }
  }

  /** Lists again (compaction, or the realizer asked for it): the listing goes to the realizer whole. */
  private async relist(): Promise<void> {
    const listed = await this.options.store.range(this.options.layout.objects);
    this.touched();
    this.pending = listed.kvs.map((kv) => ({ key: kv.key, value: kv.value, modRevision: kv.modRevision }));
    this.pendingRevision = listed.revision;
    this.seenRevision = Math.max(this.seenRevision, listed.revision);
    this.needsRelist = false;
    this.resyncs++;
    this.metrics?.resynced();
    this.log.info({ revision: listed.revision, keys: listed.kvs.length }, 'listed again');
    // Watch from the listing on: events the old watch still had in flight predate it.
    await this.watch?.cancel().catch(() => undefined);
    await this.startWatch(listed.revision + 1);
    await this.realizeBatch(true);
  }

  /**
   * Realizes what is pending (a whole listing when `relist`). The changes and their revision are
   * taken as realized only once the realizer says the datapath holds them; events that arrive
   * meanwhile stay pending for the next round.
   */
  private async realizeBatch(relist: boolean): Promise<void> {
    const changes = this.pending;
    const revision = this.pendingRevision;
    const count = changes.length;
    let result: RealizeResult;
    try {
      result = await this.options.realizer.realize(changes, relist || this.first);
    } catch (error) {
      this.unrealized = true;
      if ((error as { relist?: unknown }).relist === true) this.needsRelist = true;
      throw error;
    }
    // What arrived while the realizer worked stays pending; what it realized goes.
    this.pending = this.pending.slice(count);
    const wasFirst = this.first;
    this.unrealized = false;
    this.first = false;
    this.failures = 0;
    this.lastError = undefined;
    this.metrics?.pipelineSeconds(result.pipelineMs / 1000);
    this.metrics?.renderSeconds(result.realizeMs / 1000);
    this.counts = result.counts;
    this.metrics?.counts(this.counts);
    this.noteUnreadable(result);
    const phase = result.unreadableCount > 0 ? 'degraded' : 'ready';
    const ms = Math.round(result.pipelineMs + result.realizeMs);
    if (wasFirst || result.first || this.phase !== phase)
      this.log[phase === 'ready' ? 'info' : 'warn'](
        { revision, ms, ...this.counts, unreadable: result.unreadableCount },
        `${wasFirst ? 'first snapshot realized' : result.first ? 'rebuilt and realized' : 'realized again'}: ${phase === 'ready' ? 'ready' : `degraded (${result.unreadableCount} ${result.unreadableCount === 1 ? 'key cannot' : 'keys cannot'} be read)`}`,
      );
    else this.log.debug({ revision, changes: count, ms }, 'realized');
    this.phase = phase;
    this.realized(revision);
  }

  /** Logs the values found unreadable and keeps the list the status shows. */
  private noteUnreadable(result: RealizeResult): void {
    for (const key of result.found)
      this.log.error(
        { key: key.key, modRevision: key.modRevision, kept: key.kept },
        `cannot read ${key.key}: ${key.reason}; ${KEPT[key.kept]}`,
      );
    if (result.unreadableCount === 0 && this.unreadableCount > 0)
      this.log.info({}, 'every key can be read again');
    this.unreadable = result.unreadable;
    this.unreadableCount = result.unreadableCount;
    this.metrics?.unreadable(result.unreadableCount);
  }

  private realized(revision: number): void {
    this.realizedRevision = Math.max(this.realizedRevision, revision);
    this.metrics?.revisions(this.seenRevision, this.realizedRevision);
    this.metrics?.state(this.ready, this.contact.stale);
    this.status.schedule();
    this.options.onRealized?.(this.realizedRevision);
  }

  /** A failed realization, verification or read: recorded, reported, and retried with backoff. */
  private failed(error: unknown): void {
    this.failures++;
    const text = message(error);
    this.lastError = { message: text, at: new Date().toISOString() };
    if (!this.first) this.phase = 'failing';
    this.metrics?.transactionFailed();
    this.metrics?.state(this.ready, this.contact.stale);
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 100, maxMs: 5000 };
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures - 1, 20));
    this.log.error({ error: text, retryInMs: delay, failures: this.failures }, 'realization failed');
    this.status.schedule();
    this.later(delay, () => this.kick());
  }

  private later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  /** etcd answered: in contact (again, if the agent was stale). */
  private touched(): void {
    this.contact.touch();
    if (this.contact.stale) this.checkStale();
  }

  private checkStale(): void {
    this.status.check();
    const change = this.contact.judge();
    if (!change) return;
    this.metrics?.state(this.ready, change.stale);
    if (change.stale)
      this.log.warn(
        { sinceMs: change.sinceMs },
        `no contact with ${change.what}: what is enforced may be stale`,
      );
    else this.log.info({}, `in contact with ${change.what} again`);
    this.status.schedule();
  }

  private record(): StatusRecord {
    return {
      ...this.state,
      version: this.options.version,
      pid: process.pid,
      startedAt: this.startedAt,
      updatedAt: new Date().toISOString(),
    };
  }

  private registration(stopped = false): AgentRegistration {
    return {
      node: this.options.node,
      datapath: this.options.realizer.datapath,
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
}

/** What an unreadable key's entry in the log says the node enforces for it. */
const KEPT: Record<UnreadableKey['kept'], string> = {
  'last-good': 'its last good version stays in force',
  'fail-closed': 'every pod of its namespace is isolated both ways until it can be read (fail closed)',
  'left-out': 'it is left out until it can be read',
};

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
