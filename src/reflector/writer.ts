/**
 * Writes what sources report into etcd, minimally and in batches. It keeps a digest of every
 * value under the layout's `k8s/` prefix (loaded from etcd when it starts leading), so an object
 * whose reduced value is already there writes nothing — a pod's status churn, a relist after a
 * 410, a restart. Changes wait in a map keyed by etcd key (a later change to the same key replaces
 * the earlier one) and go out as transactions of at most `maxOps` operations, one at a time, each
 * fenced by leadership. A list's end deletes the keys of its stream that the list did not hold.
 * Each stream's last resourceVersion is recorded in the same transaction as its last pending
 * change, so a restart resumes from a version whose every change is in etcd.
 */
import { describeEtcdError } from '../etcd/index.ts';
import type { EtcdStore, TxnCompare, TxnOp } from '../etcd/types.ts';
import type { RawApiObject } from '../kube/types.ts';
import type { Diagnostic } from '../model/types.ts';
import { valueDigest as digest } from '../reflected/index.ts';
import type { KeyLayout } from '../reflected/index.ts';
import { encodeItem } from './page-encoder.ts';
import type { EncodedItem, ReflectorStats, SourceSink, StreamId } from './types.ts';

interface WriterOptions {
  readonly layout: KeyLayout;
  readonly store: EtcdStore;
  /** The leadership fence added to every transaction (none: an unfenced writer, for one reflector). */
  readonly fence?: TxnCompare;
  /** Operations per transaction (etcd's default limit is 128). */
  readonly maxOps?: number;
  /** Bytes of values per transaction (etcd's default request limit is 1.5 MiB). */
  readonly maxBytes?: number;
  /** How an object is named in diagnostics (its API path, or its file). */
  readonly describe?: (object: RawApiObject) => string;
  readonly onDiagnostics?: (diagnostics: readonly Diagnostic[]) => void;
  /** The fence failed: another reflector leads now. Nothing more is written. */
  readonly onFenceLost?: () => void;
  /** etcd failed a transaction; it is retried after `retryInMs`. */
  readonly onError?: (error: Error, retryInMs: number) => void;
  /**
   * etcd refused a transaction for who this writer is (permission denied by its RBAC, credentials
   * refused): retrying cannot help, so the writer stops, as when deposed. Default: retried like
   * any other failure.
   */
  readonly onRefused?: (error: Error) => void;
  /** A transaction committed these object keys at `revision` (metrics, benchmarks). */
  readonly onCommitted?: (keys: readonly string[], revision: number) => void;
}

/**
 * Marks a recorded version that is a digest of a list's content (manifests have no
 * resourceVersion), not a Kubernetes resourceVersion to resume a watch from.
 */
const CONTENT_VERSION = 'content:';

/** A resourceVersion is written alone (without object changes) at most this often per stream. */
const LONE_VERSION_INTERVAL_MS = 60_000;

export class EtcdWriter implements SourceSink {
  /** Digest of each value in etcd under `k8s/`. */
  private readonly mirror = new Map<string, string>();
  /** Changes not yet sent: value (and its digest), or null for a delete; with the stream that made them. */
  private readonly pending = new Map<string, Change>();
  /**
   * Changes sent in the transaction awaiting its answer: what etcd holds once it commits. A change
   * that arrives meanwhile is compared with these, not with the mirror — compared with the
   * mirror, a policy deleted in flight and put back as it was looked unchanged, and was lost.
   */
  private readonly inflight = new Map<string, Change>();
  private readonly pendingPerStream = new Map<string, number>();
  /** resourceVersions to record, per stream. */
  private readonly versions = new Map<string, { rv: string; stream: StreamId }>();
  private readonly recordedAt = new Map<string, number>();
  private readonly recorded = new Map<string, string>();
  /** Keys a list in progress has seen, per stream. */
  private readonly listing = new Map<string, Set<string>>();
  private flushing = false;
  private scheduled = false;
  private stopped = false;
  private retryMs = 100;
  private idleWaiters: (() => void)[] = [];
  private readonly counts = {
    received: 0,
    written: 0,
    unchanged: 0,
    transactions: 0,
    invalid: 0,
    revision: 0,
  };

  constructor(private readonly options: WriterOptions) {}

  get stats(): ReflectorStats {
    return { ...this.counts };
  }

  /** Loads what etcd holds (digests and recorded resourceVersions); call before anything else. */
  async load(): Promise<void> {
    const { layout, store } = this.options;
    const objects = await store.range(layout.objects);
    for (const kv of objects.kvs) this.mirror.set(kv.key, digest(kv.value));
    const versions = await store.range(layout.resourceVersions);
    for (const kv of versions.kvs) this.recorded.set(kv.key, kv.value);
    this.counts.revision = objects.revision;
  }

  /**
   * The resourceVersion recorded for a stream, to resume its watch from (none when manifests
   * wrote the record: their content digest means nothing to the API server — list instead).
   */
  resourceVersion(stream: StreamId): string | undefined {
    const recorded = this.recorded.get(this.options.layout.resourceVersionKey(stream.kind, stream.namespace));
    return recorded?.startsWith(CONTENT_VERSION) ? undefined : recorded;
  }

  /** Keys etcd holds under `k8s/` (as this writer knows them). */
  get size(): number {
    return this.mirror.size;
  }

  /** Resolves when every change so far is committed (or the writer stopped). */
  idle(): Promise<void> {
    if (this.stopped || (this.pending.size === 0 && !this.flushing)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops writing; pending changes are dropped (a successor relists or resumes). */
  stop(): void {
    this.stopped = true;
    this.wakeIdle();
  }

  listStart(stream: StreamId): void {
    this.listing.set(streamKey(stream), new Set());
  }

  listObjects(stream: StreamId, objects: readonly RawApiObject[]): void {
    this.listEncoded(
      stream,
      objects.map((object) => this.encode(object)),
    );
  }

  /** Items of the list in progress, encoded already (by the reflector's workers). */
  listEncoded(stream: StreamId, items: readonly (EncodedItem | null)[]): void {
    const seen = this.listing.get(streamKey(stream));
    for (const item of items) {
      this.counts.received++;
      if (item === null) continue;
      this.applyEncoded(stream, item);
      seen?.add(item.key);
    }
  }

  listDone(stream: StreamId, resourceVersion: string): void {
    const id = streamKey(stream);
    const seen = this.listing.get(id) ?? new Set<string>();
    this.listing.delete(id);
    // Whatever the stream's prefix holds that the list did not: deleted while we were away.
    const prefix = streamPrefix(this.options.layout, stream);
    for (const key of [...this.mirror.keys(), ...this.inflight.keys(), ...this.pending.keys()]) {
      if (key.startsWith(prefix) && !seen.has(key) && this.present(key))
        this.enqueue(key, null, undefined, id);
    }
    this.noteVersion(stream, resourceVersion === '' ? this.contentVersion(prefix) : resourceVersion);
  }

  listAbort(stream: StreamId): void {
    this.listing.delete(streamKey(stream));
  }

  upsert(stream: StreamId, object: RawApiObject, resourceVersion: string): void {
    this.apply(stream, object);
    this.noteVersion(stream, resourceVersion);
  }

  remove(stream: StreamId, object: RawApiObject, resourceVersion: string): void {
    this.counts.received++;
    const metadata = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    const key = this.options.layout.key(
      String(object.kind),
      typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
      String(metadata.name),
    );
    if (this.present(key)) this.enqueue(key, null, undefined, streamKey(stream));
    this.noteVersion(stream, resourceVersion);
  }

  progress(stream: StreamId, resourceVersion: string): void {
    this.noteVersion(stream, resourceVersion);
  }

  /** Encodes an object and queues its put (or delete, when it is invalid or left out). */
  private apply(stream: StreamId, object: RawApiObject): void {
    this.counts.received++;
    const item = this.encode(object);
    if (item !== null) this.applyEncoded(stream, item);
  }

  /** The object encoded as the reflector's workers encode list pages (null: not a reflected kind). */
  private encode(object: RawApiObject): EncodedItem | null {
    return encodeItem(this.options.layout, object, this.options.describe?.(object) ?? '<api>');
  }

  private applyEncoded(stream: StreamId, item: EncodedItem): void {
    if (item.diagnostics.length) this.options.onDiagnostics?.(item.diagnostics);
    if (item.value === undefined || item.digest === undefined) {
      if (item.diagnostics.some((d) => d.severity === 'error')) this.counts.invalid++;
      if (this.present(item.key)) this.enqueue(item.key, null, undefined, streamKey(stream));
      return;
    }
    const queued = this.pending.get(item.key) ?? this.inflight.get(item.key);
    const same = queued ? queued.value === item.value : this.mirror.get(item.key) === item.digest;
    if (same) this.counts.unchanged++;
    else this.enqueue(item.key, item.value, item.digest, streamKey(stream));
  }

  /**
   * The version of a list without a resourceVersion (manifests): a digest of what the stream's
   * keys hold once its changes are applied. Recorded like a resourceVersion, in the transaction of
   * the stream's last change, it moves the store's policy revision for deletions too (a delete
   * leaves no key whose revision `palisade status` could read); unchanged content writes nothing.
   */
  private contentVersion(prefix: string): string {
    const held: string[] = [];
    for (const key of new Set([...this.mirror.keys(), ...this.inflight.keys(), ...this.pending.keys()])) {
      if (!key.startsWith(prefix)) continue;
      const queued = this.pending.get(key) ?? this.inflight.get(key);
      const value = queued
        ? queued.value === null
          ? undefined
          : (queued.digest ?? digest(queued.value))
        : this.mirror.get(key);
      if (value !== undefined) held.push(`${key}\0${value}`);
    }
    return `${CONTENT_VERSION}${digest(held.sort().join('\n'))}`;
  }

  /** Whether etcd holds the key once pending changes are applied. */
  private present(key: string): boolean {
    const queued = this.pending.get(key) ?? this.inflight.get(key);
    return queued ? queued.value !== null : this.mirror.has(key);
  }

  /** Whether etcd holds `value` (null: nothing) at `key` once the transaction in flight commits. */
  private holds(key: string, value: string | null, valueDigest: string | undefined): boolean {
    const sent = this.inflight.get(key);
    if (sent) return value === null ? sent.value === null : sent.value === value;
    return value === null ? !this.mirror.has(key) : this.mirror.get(key) === valueDigest;
  }

  private enqueue(key: string, value: string | null, valueDigest: string | undefined, stream: string): void {
    if (this.stopped) return;
    const previous = this.pending.get(key);
    if (previous) this.countStream(previous.stream, -1);
    // A change back to what etcd holds (or will, once the transaction in flight commits)
    // cancels the pending one.
    if (this.holds(key, value, valueDigest)) {
      this.pending.delete(key);
    } else {
      this.pending.set(key, { value, digest: valueDigest, stream });
      this.countStream(stream, 1);
    }
    this.schedule();
  }

  private countStream(stream: string, delta: number): void {
    this.pendingPerStream.set(stream, (this.pendingPerStream.get(stream) ?? 0) + delta);
  }

  private noteVersion(stream: StreamId, rv: string): void {
    if (rv === '') return;
    this.versions.set(streamKey(stream), { rv, stream });
    if (Date.now() - (this.recordedAt.get(streamKey(stream)) ?? 0) > LONE_VERSION_INTERVAL_MS)
      this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.flushing || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.stopped) return;
    this.flushing = true;
    try {
      while (!this.stopped) {
        const batch = this.nextBatch();
        if (!batch) break;
        const ok = await this.commit(batch);
        if (!ok) break;
      }
    } finally {
      this.flushing = false;
      if (this.pending.size === 0 || this.stopped) this.wakeIdle();
    }
  }

  /** Up to maxOps changes, plus the resourceVersions of streams this batch finishes. */
  private nextBatch(): { ops: TxnOp[]; changes: [string, Change][]; versions: string[] } | undefined {
    const { layout } = this.options;
    const maxOps = this.options.maxOps ?? 128;
    const maxBytes = this.options.maxBytes ?? 1024 * 1024;
    const room = Math.max(1, maxOps - Math.min(this.versions.size, Math.floor(maxOps / 2)));
    const changes: [string, Change][] = [];
    const ops: TxnOp[] = [];
    let bytes = 0;
    for (const [key, change] of this.pending) {
      const value = change.value;
      if (ops.length >= room || (ops.length > 0 && bytes + (value?.length ?? 0) > maxBytes)) break;
      ops.push(value === null ? { type: 'delete', key } : { type: 'put', key, value });
      bytes += key.length + (value?.length ?? 0);
      changes.push([key, change]);
    }
    for (const [key, change] of changes) {
      this.pending.delete(key);
      this.inflight.set(key, change);
      this.countStream(change.stream, -1);
    }
    const versions: string[] = [];
    const now = Date.now();
    for (const [id, { rv, stream }] of this.versions) {
      if (ops.length >= maxOps) break;
      if ((this.pendingPerStream.get(id) ?? 0) > 0) continue; // its changes are not all out yet
      const touched = changes.some(([, change]) => change.stream === id);
      // Alone, a version is written only now and then: churn that changes nothing writes nothing.
      if (!touched && now - (this.recordedAt.get(id) ?? 0) < LONE_VERSION_INTERVAL_MS) continue;
      const key = layout.resourceVersionKey(stream.kind, stream.namespace);
      if (this.recorded.get(key) === rv) continue;
      ops.push({ type: 'put', key, value: rv });
      versions.push(id);
    }
    if (ops.length === 0) return undefined;
    return { ops, changes, versions };
  }

  private async commit(batch: {
    ops: TxnOp[];
    changes: [string, Change][];
    versions: string[];
  }): Promise<boolean> {
    const { store, fence } = this.options;
    try {
      const result = await store.txn(fence ? [fence] : [], batch.ops);
      if (!result.succeeded) {
        this.stopped = true;
        this.options.onFenceLost?.();
        return false;
      }
      this.retryMs = 100;
      this.counts.transactions++;
      this.counts.revision = result.revision;
      for (const [key, change] of batch.changes) {
        this.counts.written++;
        this.inflight.delete(key);
        if (change.value === null) this.mirror.delete(key);
        else this.mirror.set(key, change.digest ?? digest(change.value));
      }
      this.options.onCommitted?.(
        batch.changes.map(([key]) => key),
        result.revision,
      );
      const now = Date.now();
      for (const id of batch.versions) {
        const noted = this.versions.get(id)!;
        const key = this.options.layout.resourceVersionKey(noted.stream.kind, noted.stream.namespace);
        const written = batch.ops.find((op) => op.key === key) as { value: string };
        this.recorded.set(key, written.value);
        this.recordedAt.set(id, now);
        if (noted.rv === written.value) this.versions.delete(id);
      }
      return true;
    } catch (error) {
      const kind = describeEtcdError(error).kind;
      if (this.options.onRefused && (kind === 'permission' || kind === 'auth')) {
        this.stopped = true;
        this.options.onRefused(error instanceof Error ? error : new Error(String(error)));
        return false;
      }
      // Put the batch back (unless newer changes to the same keys arrived) and try again later.
      for (const [key, change] of batch.changes) {
        this.inflight.delete(key);
        if (!this.pending.has(key)) {
          this.pending.set(key, change);
          this.countStream(change.stream, 1);
        }
      }
      const wait = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, 5000);
      this.options.onError?.(error instanceof Error ? error : new Error(String(error)), wait);
      setTimeout(() => this.schedule(), wait);
      return false;
    }
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

function streamKey(stream: StreamId): string {
  return stream.namespace === undefined ? stream.kind : `${stream.kind}/${stream.namespace}`;
}

function streamPrefix(layout: KeyLayout, stream: StreamId): string {
  return stream.namespace === undefined
    ? layout.kindPrefix(stream.kind)
    : `${layout.kindPrefix(stream.kind)}${stream.namespace}/`;
}

/** A change waiting to be sent: the value and its digest, or null for a delete. */
interface Change {
  readonly value: string | null;
  readonly digest: string | undefined;
  readonly stream: string;
}
