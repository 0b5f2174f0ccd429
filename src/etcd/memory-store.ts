/**
 * An EtcdStore held in the process: etcd's data model (one revision per transaction that
 * writes, modification revisions per key, ranges read at the current revision, watches of a key
 * range from a revision with a bounded history behind them, compare-guarded transactions,
 * leases that take their keys with them) without a server. The agent's direct mode runs the
 * reflector's writer into it and the node agent reads from it, so the Kubernetes API feeds the
 * same writer, codec, key layout, mirror and pipeline as the reflected mode — nothing is
 * reimplemented for the direct path.
 *
 * What it does not do: persist, or share anything between processes. Its leases never expire
 * (the process holding them is the only client); `onKeepAlive` fires on a timer as etcd's
 * keepalives would, so a lease holder's contact checks see a live store.
 */
import type {
  EtcdEvent,
  EtcdStore,
  EtcdWatch,
  KeyValue,
  Lease,
  RangeResult,
  TxnCompare,
  TxnOp,
  TxnResult,
  WatchCallbacks,
} from './types.ts';

/** Events kept for watches that start in the past; older ones are compacted away. */
const DEFAULT_HISTORY = 10_000;

interface Watcher {
  readonly start: string;
  readonly end: string;
  readonly callbacks: WatchCallbacks;
  /** The revision delivered up to. */
  revision: number;
  cancelled: boolean;
}

interface HeldLease {
  readonly id: string;
  readonly keys: Set<string>;
  readonly timer: NodeJS.Timeout;
  readonly keepAlive: (() => void)[];
}

interface MemoryStoreOptions {
  /** Most events kept for watches from an earlier revision (default 10,000). */
  readonly history?: number;
}

export class MemoryStore implements EtcdStore {
  private readonly kvs = new Map<string, KeyValue>();
  private revision = 1;
  private compacted = 0;
  /** Events of every revision after `compacted`, in order. */
  private events: EtcdEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly leases = new Map<string, HeldLease>();
  private nextLease = 1;
  private closed = false;
  private readonly historyLimit: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.historyLimit = options.history ?? DEFAULT_HISTORY;
  }

  get(key: string): Promise<KeyValue | undefined> {
    return Promise.resolve(this.kvs.get(key));
  }

  range(prefix: string, options: { revision?: number } = {}): Promise<RangeResult> {
    if (options.revision !== undefined && options.revision !== this.revision)
      return Promise.reject(new Error('the in-process store reads only its current revision'));
    const end = prefixEnd(prefix);
    const kvs = [...this.kvs.values()]
      .filter((kv) => kv.key >= prefix && kv.key < end)
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return Promise.resolve({ kvs, revision: this.revision });
  }

  lastModified(prefix: string): Promise<{ readonly modRevision: number; readonly revision: number }> {
    const end = prefixEnd(prefix);
    let modRevision = 0;
    for (const kv of this.kvs.values())
      if (kv.key >= prefix && kv.key < end) modRevision = Math.max(modRevision, kv.modRevision);
    return Promise.resolve({ modRevision, revision: this.revision });
  }

  watch(
    prefix: string,
    fromRevision: number,
    callbacks: WatchCallbacks,
    options: { readonly end?: string } = {},
  ): Promise<EtcdWatch> {
    const watcher: Watcher = {
      start: prefix,
      end: options.end ?? prefixEnd(prefix),
      callbacks,
      revision: fromRevision - 1,
      cancelled: false,
    };
    this.watchers.add(watcher);
    // As etcd does, a watch answers after it was created: the history first, then live events.
    queueMicrotask(() => {
      if (watcher.cancelled) return;
      if (fromRevision <= this.compacted) {
        this.watchers.delete(watcher);
        watcher.cancelled = true;
        callbacks.onCompacted(this.compacted);
        return;
      }
      this.deliver(watcher, this.events);
    });
    return Promise.resolve({
      get revision() {
        return watcher.revision;
      },
      cancel: () => {
        watcher.cancelled = true;
        this.watchers.delete(watcher);
        return Promise.resolve();
      },
    });
  }

  txn(
    compares: readonly TxnCompare[],
    success: readonly TxnOp[],
    failure: readonly TxnOp[] = [],
  ): Promise<TxnResult> {
    if (this.closed) return Promise.reject(new Error('the in-process store is closed'));
    const succeeded = compares.every((compare) => this.holds(compare));
    for (const op of succeeded ? success : failure)
      if (op.type === 'put' && op.lease !== undefined && op.lease !== '0' && !this.leases.has(op.lease))
        return Promise.reject(new Error(`lease ${op.lease} not found`));
    this.commit(succeeded ? success : failure);
    return Promise.resolve({ succeeded, revision: this.revision });
  }

  grantLease(ttlSeconds: number): Promise<Lease> {
    const id = String(this.nextLease++);
    const held: HeldLease = {
      id,
      keys: new Set(),
      keepAlive: [],
      timer: setInterval(() => held.keepAlive.forEach((listener) => listener()), (ttlSeconds * 1000) / 3),
    };
    held.timer.unref();
    this.leases.set(id, held);
    return Promise.resolve({
      id,
      onLost: () => undefined,
      onKeepAlive: (listener) => void held.keepAlive.push(listener),
      revoke: () => {
        this.revoke(held);
        return Promise.resolve();
      },
    });
  }

  compact(revision: number): Promise<void> {
    this.dropHistory(Math.min(revision, this.revision));
    return Promise.resolve();
  }

  close(): void {
    this.closed = true;
    for (const lease of this.leases.values()) clearInterval(lease.timer);
    this.leases.clear();
    for (const watcher of this.watchers) watcher.cancelled = true;
    this.watchers.clear();
  }

  private holds(compare: TxnCompare): boolean {
    const kv = this.kvs.get(compare.key);
    switch (compare.target) {
      case 'value':
        return kv !== undefined && kv.value === compare.equals;
      case 'createRevision':
        return (kv?.createRevision ?? 0) === compare.equals;
      case 'modRevision':
        return (kv?.modRevision ?? 0) === compare.equals;
      case 'lease':
        return (kv?.lease ?? '0') === compare.equals;
    }
  }

  /** Applies a transaction's operations as one revision (none when nothing changes). */
  private commit(ops: readonly TxnOp[]): void {
    const revision = this.revision + 1;
    const events: EtcdEvent[] = [];
    for (const op of ops) {
      const old = this.kvs.get(op.key);
      if (old && old.lease !== '0') this.leases.get(old.lease)?.keys.delete(op.key);
      if (op.type === 'put') {
        const lease = op.lease ?? '0';
        this.kvs.set(op.key, {
          key: op.key,
          value: op.value,
          createRevision: old?.createRevision ?? revision,
          modRevision: revision,
          lease,
        });
        if (lease !== '0') this.leases.get(lease)?.keys.add(op.key);
        events.push({ type: 'put', key: op.key, value: op.value, modRevision: revision });
      } else if (old) {
        this.kvs.delete(op.key);
        events.push({ type: 'delete', key: op.key, modRevision: revision });
      }
    }
    if (events.length === 0) return;
    this.revision = revision;
    this.events.push(...events);
    if (this.events.length > this.historyLimit) {
      const oldest = this.events[this.events.length - this.historyLimit]!.modRevision;
      this.dropHistory(oldest - 1);
    }
    queueMicrotask(() => {
      for (const watcher of this.watchers) this.deliver(watcher, events);
    });
  }

  /** Hands a watcher the events after its revision that fall in its range, as one call. */
  private deliver(watcher: Watcher, events: readonly EtcdEvent[]): void {
    if (watcher.cancelled) return;
    const fresh = events.filter(
      (e) => e.modRevision > watcher.revision && e.key >= watcher.start && e.key < watcher.end,
    );
    const last = events.at(-1)?.modRevision ?? watcher.revision;
    if (last <= watcher.revision) return;
    watcher.revision = last;
    if (fresh.length > 0) watcher.callbacks.onEvents(fresh, last);
    else watcher.callbacks.onProgress?.(last);
  }

  private dropHistory(revision: number): void {
    if (revision <= this.compacted) return;
    this.compacted = revision;
    this.events = this.events.filter((e) => e.modRevision > revision);
  }

  private revoke(held: HeldLease): void {
    clearInterval(held.timer);
    if (!this.leases.delete(held.id)) return;
    this.commit([...held.keys].map((key) => ({ type: 'delete', key }) as const));
  }
}

/** The smallest key after every key starting with `prefix` (etcd's prefix range end). */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
