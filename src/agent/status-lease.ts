/**
 * The agent's status key and the lease it is bound to: granted at start, kept alive by the etcd
 * client, granted again when lost or when no keepalive came for longer than its TTL (the client's
 * keepalive loop can stall on a connection that came back), and the key rewritten at most every
 * `intervalMs` while the agent's state changes. A dead agent's key disappears with its lease.
 */
import { isLeaseNotFound } from '../etcd/index.ts';
import type { EtcdStore, Lease } from '../etcd/types.ts';
import type { AgentLog, StatusRecord } from './types.ts';

interface StatusLeaseOptions {
  readonly store: EtcdStore;
  /** The status key (`<root>/v1/status/nodes/<node>`). */
  readonly key: string;
  readonly ttlSeconds: number;
  readonly intervalMs: number;
  readonly log: AgentLog;
  /** The record to write, as of now. */
  readonly record: () => StatusRecord;
  /** Called on every sign of contact with etcd (a keepalive answered). */
  readonly onContact: () => void;
}

export class StatusLease {
  private lease: Lease | undefined;
  private aliveAt = Date.now();
  private retryTimer: NodeJS.Timeout | undefined;
  private due: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  private stopped = false;

  constructor(private readonly options: StatusLeaseOptions) {}

  /** Grants the lease and writes the key (again, after losing it). */
  async grant(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const lease = await this.options.store.grantLease(this.options.ttlSeconds);
      if (this.stopped) return void (await lease.revoke().catch(() => undefined));
      this.lease = lease;
      this.aliveAt = Date.now();
      lease.onKeepAlive(() => {
        this.aliveAt = Date.now();
        this.options.onContact();
      });
      lease.onLost((error) => {
        if (this.lease !== lease || this.stopped) return;
        this.lease = undefined;
        this.options.log.warn({ error: error.message }, 'status lease lost; granting another');
        this.retry(500);
      });
      try {
        return await this.write();
      } catch (error) {
        // A stall longer than the TTL between the grant and the first write: the lease is gone
        // before it was used (an agent starting on a loaded node exited on this). Grant another.
        if (!isLeaseNotFound(error) || this.stopped || attempt >= 5) throw error;
        if (this.lease === lease) this.lease = undefined;
        this.options.log.warn({ attempt }, 'the status lease expired before its first use; granting another');
      }
    }
  }

  /** Grants another lease when the current one had no keepalive for longer than its TTL. */
  check(): void {
    const lease = this.lease;
    const ttlMs = this.options.ttlSeconds * 1000;
    if (!lease || this.stopped || Date.now() - this.aliveAt <= ttlMs * 1.5) return;
    this.lease = undefined;
    this.options.log.warn(
      { sinceMs: Date.now() - this.aliveAt },
      'status lease not kept alive for longer than its TTL; granting another',
    );
    void lease.revoke().catch(() => undefined);
    this.retry(0);
  }

  /** Writes the key now, or as soon as `intervalMs` has passed since the last write. */
  schedule(): void {
    if (this.due || this.stopped) return;
    const wait = Math.max(0, this.lastWrite + this.options.intervalMs - Date.now());
    this.due = setTimeout(() => {
      this.due = undefined;
      this.write().catch((error: unknown) => {
        this.options.log.debug({ error: String(error) }, 'status write failed; retrying');
        this.due = setTimeout(() => {
          this.due = undefined;
          this.schedule();
        }, this.options.intervalMs);
      });
    }, wait);
  }

  /** Stops writing and revokes the lease (the key goes with it). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.due) clearTimeout(this.due);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const lease = this.lease;
    this.lease = undefined;
    await lease?.revoke();
  }

  private retry(delay: number): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.grant().catch((error: unknown) => {
        const next = Math.min(Math.max(delay * 2, 250), 5000);
        this.options.log.debug({ error: String(error), retryInMs: next }, 'granting the status lease failed');
        this.retry(next);
      });
    }, delay);
  }

  private async write(): Promise<void> {
    const lease = this.lease;
    if (!lease || this.stopped) return;
    this.lastWrite = Date.now();
    await this.options.store.txn(
      [],
      [{ type: 'put', key: this.options.key, value: JSON.stringify(this.options.record()), lease: lease.id }],
    );
  }
}
