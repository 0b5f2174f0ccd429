/**
 * The EtcdStore over the `etcd3` client (Microsoft's, maintained, on the official gRPC stack).
 * Reads, writes and leases use its RPC layer directly: its higher-level watcher hides the compact
 * revision when a watch starts too far back, and the reflector and the agent must know that
 * (a compacted watch means list again), so watches here are our own, on its raw watch stream.
 * The client is imported lazily: only `reflect` (and later the agent) load gRPC.
 */
import type { Etcd3, IKeyValue, IOptions, IWatchResponse } from 'etcd3';
import { clientOptions } from './connection.ts';
import { EtcdAccessError } from './errors.ts';
import type {
  EtcdConnection,
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

/** etcd's protobuf enums, by number (the client's loader accepts numbers). */
const TARGET = { version: 0, createRevision: 1, modRevision: 2, value: 3, lease: 4 } as const;
const EQUAL = 0;
/**
 * RangeRequest's SortOrder.DESCEND and SortTarget.MOD (etcd's rpc.proto: KEY 0, VERSION 1,
 * CREATE 2, MOD 3, VALUE 4 — 2 sorted by creation, and status under-reported lag).
 */
const SORT_DESCEND = 2;
const SORT_BY_MOD = 3;

/**
 * Connects to etcd as `connection` says. Throws EtcdAccessError (one line) when its settings are
 * inconsistent, a file cannot be read, or the certificate and key do not make a TLS identity;
 * etcd itself is first asked by the first call (see `ensureReachable`).
 */
export async function connectEtcd(connection: EtcdConnection): Promise<EtcdStore> {
  const options = clientOptions(connection);
  const { Etcd3 } = await import('etcd3');
  let client: Etcd3;
  try {
    client = new Etcd3(options as IOptions);
  } catch (error) {
    // Node's TLS refused the files (a key that is not the certificate's, a file that is no PEM).
    const files = [connection.caFile, connection.certFile, connection.keyFile].filter((f) => f !== undefined);
    throw new EtcdAccessError(
      `cannot use ${files.join(', ')} for TLS: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  return new GrpcEtcdStore(client);
}

class GrpcEtcdStore implements EtcdStore {
  /** Leases kept alive by this client: closing it stops them (they then expire after their TTL). */
  private readonly leases = new Set<{ release(): void }>();

  constructor(private readonly client: Etcd3) {}

  async get(key: string): Promise<KeyValue | undefined> {
    const response = await this.client.kv.range({ key: Buffer.from(key) });
    const kv = response.kvs[0];
    return kv ? toKeyValue(kv) : undefined;
  }

  async range(prefix: string, options: { revision?: number; pageSize?: number } = {}): Promise<RangeResult> {
    const end = prefixEnd(Buffer.from(prefix));
    const limit = options.pageSize ?? 1000;
    const kvs: KeyValue[] = [];
    let revision = options.revision ?? 0;
    let from = Buffer.from(prefix);
    for (;;) {
      const page = await this.client.kv.range({ key: from, range_end: end, limit, revision });
      if (revision === 0) revision = Number(page.header.revision);
      for (const kv of page.kvs) kvs.push(toKeyValue(kv));
      if (!page.more || page.kvs.length === 0) break;
      // The next page starts just after the last key of this one, at the same revision.
      from = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
    }
    return { kvs, revision };
  }

  async lastModified(prefix: string): Promise<{ modRevision: number; revision: number }> {
    const response = await this.client.kv.range({
      key: Buffer.from(prefix),
      range_end: prefixEnd(Buffer.from(prefix)),
      limit: 1,
      sort_order: SORT_DESCEND,
      sort_target: SORT_BY_MOD,
      keys_only: true,
    });
    const kv = response.kvs[0];
    return { modRevision: kv ? Number(kv.mod_revision) : 0, revision: Number(response.header.revision) };
  }

  async watch(
    prefix: string,
    fromRevision: number,
    callbacks: WatchCallbacks,
    options: { readonly end?: string } = {},
  ): Promise<EtcdWatch> {
    const key = Buffer.from(prefix);
    const end = options.end !== undefined ? Buffer.from(options.end) : prefixEnd(key);
    const watch = new PrefixWatch(this.client, key, end, fromRevision, callbacks);
    await watch.start();
    return watch;
  }

  async txn(
    compares: readonly TxnCompare[],
    success: readonly TxnOp[],
    failure: readonly TxnOp[] = [],
  ): Promise<TxnResult> {
    const response = await this.client.kv.txn({
      compare: compares.map(toCompare),
      success: success.map(toRequest),
      failure: failure.map(toRequest),
    });
    return { succeeded: response.succeeded, revision: Number(response.header.revision) };
  }

  async grantLease(ttlSeconds: number): Promise<Lease> {
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: true });
    this.leases.add(lease);
    const id = await lease.grant();
    let lostListener: ((error: Error) => void) | undefined;
    let aliveListener: (() => void) | undefined;
    lease.on('keepaliveSucceeded', () => aliveListener?.());
    let lost = false;
    lease.on('lost', (error: Error) => {
      if (lost) return;
      lost = true;
      lostListener?.(error);
    });
    return {
      id,
      onLost: (listener) => {
        lostListener = listener;
      },
      onKeepAlive: (listener) => {
        aliveListener = listener;
      },
      revoke: async () => {
        lost = true;
        this.leases.delete(lease);
        if (!lease.revoked()) await lease.revoke().catch(() => undefined);
      },
    };
  }

  async compact(revision: number): Promise<void> {
    await this.client.kv.compact({ revision, physical: true });
  }

  close(): void {
    for (const lease of this.leases) lease.release();
    this.leases.clear();
    this.client.close();
  }
}

/**
 * A watch on one prefix over its own gRPC stream. It resumes from the revision after the last
 * one delivered when the stream breaks; a compacted start revision ends it with `onCompacted`.
 */
class PrefixWatch implements EtcdWatch {
  private stream: Awaited<ReturnType<Etcd3['watchClient']['watch']>> | undefined;
  private stopped = false;
  private delivered: number;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Etcd3,
    private readonly prefix: Buffer,
    private readonly end: Buffer,
    fromRevision: number,
    private readonly callbacks: WatchCallbacks,
  ) {
    this.delivered = fromRevision - 1;
  }

  get revision(): number {
    return this.delivered;
  }

  async start(): Promise<void> {
    const stream = await this.client.watchClient.watch();
    if (this.stopped) return void stream.cancel();
    this.stream = stream;
    stream.on('data', (response: IWatchResponse) => {
      if (this.stopped) return;
      if (response.compact_revision && response.compact_revision !== '0') {
        this.stopped = true;
        stream.cancel();
        this.callbacks.onCompacted(Number(response.compact_revision));
        return;
      }
      const revision = Number(response.header.revision);
      if (response.events.length === 0) {
        if (!response.created && revision > this.delivered) {
          this.delivered = revision;
          this.callbacks.onProgress?.(revision);
        }
        return;
      }
      this.retryMs = 100;
      const events: EtcdEvent[] = response.events.map((e) =>
        e.type === 'Delete' || (e.type as unknown) === 'DELETE'
          ? { type: 'delete', key: e.kv.key.toString(), modRevision: Number(e.kv.mod_revision) }
          : {
              type: 'put',
              key: e.kv.key.toString(),
              value: e.kv.value.toString(),
              modRevision: Number(e.kv.mod_revision),
            },
      );
      this.delivered = Math.max(revision, events[events.length - 1]!.modRevision);
      this.callbacks.onEvents(events, this.delivered);
    });
    const broken = (error: Error): void => {
      if (this.stopped || this.stream !== stream) return;
      this.retry(error);
    };
    stream.on('error', broken);
    stream.on('end', () => broken(new Error('etcd closed the watch stream')));
    stream.write({
      create_request: {
        key: this.prefix,
        range_end: this.end,
        start_revision: this.delivered + 1,
        progress_notify: true,
      },
    });
  }

  /**
   * Opens the stream again after a delay, doubling up to 5 s; a failed attempt (the client's
   * circuit breaker still open, etcd away) schedules the next, so a watch never stays dead.
   */
  private retry(error: Error): void {
    if (this.stopped) return;
    this.stream = undefined;
    this.callbacks.onRetry?.(error);
    this.retryTimer = setTimeout(() => void this.start().catch((e: Error) => this.retry(e)), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 5000);
  }

  async cancel(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.stream?.cancel();
    this.stream = undefined;
    await Promise.resolve();
  }
}

function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    lease: kv.lease,
  };
}

function toCompare(compare: TxnCompare): Record<string, unknown> {
  const base = { key: Buffer.from(compare.key), result: EQUAL, target: TARGET[compare.target] };
  switch (compare.target) {
    case 'value':
      return { ...base, value: Buffer.from(compare.equals) };
    case 'createRevision':
      return { ...base, create_revision: String(compare.equals) };
    case 'modRevision':
      return { ...base, mod_revision: String(compare.equals) };
    case 'lease':
      return { ...base, lease: compare.equals };
  }
}

function toRequest(op: TxnOp): Record<string, unknown> {
  return op.type === 'put'
    ? {
        request_put: {
          key: Buffer.from(op.key),
          value: Buffer.from(op.value),
          ...(op.lease ? { lease: op.lease } : {}),
        },
      }
    : { request_delete_range: { key: Buffer.from(op.key) } };
}

/** The smallest key greater than every key starting with `prefix`. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every key
}
