/**
 * Contracts of the etcd access layer, shared by the reflector (which writes) and the node agent
 * (which lists and watches): ranges read at one revision, watches from a revision that surface
 * compaction as its own event (the consumer must resync), batched transactions guarded by
 * comparisons, leases, and leadership. Keys and values are UTF-8 strings.
 */

/**
 * How to reach etcd and who to be there: etcdctl's `--endpoints`, `--cacert`, `--cert`, `--key`
 * and `--user`, with the same meaning. Files are PEM, read when connecting.
 */
export interface EtcdConnection {
  /** Client URLs: `http://`, `https://`, `unix:///path`, `unixs:///path` (TLS over a unix socket). */
  readonly endpoints: readonly string[];
  /** The CA bundle etcd's certificate must verify against (default: the system's CAs). */
  readonly caFile?: string;
  /**
   * This client's certificate and key. With etcd's `--client-cert-auth`, the certificate's CN is
   * the etcd user this client acts as (unless a user name and password are given too).
   */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** etcd's password authentication. */
  readonly user?: { readonly name: string; readonly password: string };
  /** How long to wait for a connection (default 3 s). */
  readonly dialTimeoutMs?: number;
  /** Deadline of each request — reads, transactions, lease grants; not watches (default 30 s). */
  readonly requestTimeoutMs?: number;
}

/** One key as etcd stores it. */
export interface KeyValue {
  readonly key: string;
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  /** The lease the key is bound to (`'0'` for none). */
  readonly lease: string;
}

/** A whole prefix read at one revision. */
export interface RangeResult {
  readonly kvs: readonly KeyValue[];
  /** The store's revision the read saw; watch from `revision + 1` to miss nothing. */
  readonly revision: number;
}

export type EtcdEvent =
  | { readonly type: 'put'; readonly key: string; readonly value: string; readonly modRevision: number }
  | { readonly type: 'delete'; readonly key: string; readonly modRevision: number };

export interface WatchCallbacks {
  /** Events of one revision or more, in order; `revision` is the store's revision they bring us to. */
  onEvents(events: readonly EtcdEvent[], revision: number): void;
  /** The start revision was compacted away: nothing more comes; list again and watch from there. */
  onCompacted(compactRevision: number): void;
  /** The store's revision moved with nothing under the prefix (progress notification). */
  onProgress?(revision: number): void;
  /** The watch failed and is being re-established from the last revision seen. */
  onRetry?(error: Error): void;
}

export interface EtcdWatch {
  /** The revision the watch has delivered up to. */
  readonly revision: number;
  cancel(): Promise<void>;
}

/** One operation of a transaction. */
export type TxnOp =
  | { readonly type: 'put'; readonly key: string; readonly value: string; readonly lease?: string }
  | { readonly type: 'delete'; readonly key: string };

/** A guard of a transaction: the transaction's success branch runs only if every guard holds. */
export type TxnCompare =
  | { readonly key: string; readonly target: 'value'; readonly equals: string }
  | { readonly key: string; readonly target: 'createRevision' | 'modRevision'; readonly equals: number }
  | { readonly key: string; readonly target: 'lease'; readonly equals: string };

export interface TxnResult {
  readonly succeeded: boolean;
  readonly revision: number;
}

/** A lease kept alive in the background until revoked or lost. */
export interface Lease {
  readonly id: string;
  /** Called once when the lease can no longer be kept alive (expired, or etcd unreachable past its TTL). */
  onLost(listener: (error: Error) => void): void;
  /** Called after every keepalive etcd answered (a sign of contact; the node agent's staleness). */
  onKeepAlive(listener: () => void): void;
  revoke(): Promise<void>;
}

/** The etcd operations Palisade uses. */
export interface EtcdStore {
  get(key: string): Promise<KeyValue | undefined>;
  /** Every key under `prefix` at one revision (the latest, or `revision`), read in pages. */
  range(prefix: string, options?: { revision?: number; pageSize?: number }): Promise<RangeResult>;
  /**
   * The highest modification revision of any key under `prefix` (0 when none), and the store's
   * revision when read — one key read, sorted by etcd.
   */
  lastModified(prefix: string): Promise<{ readonly modRevision: number; readonly revision: number }>;
  /**
   * Watches `prefix` from `fromRevision` (inclusive); reconnects by itself, from where it was.
   * With `end`, the keys from `prefix` (inclusive) to `end` (exclusive) instead.
   */
  watch(
    prefix: string,
    fromRevision: number,
    callbacks: WatchCallbacks,
    options?: { readonly end?: string },
  ): Promise<EtcdWatch>;
  /** One atomic transaction: `success` if every compare holds, else `failure`. */
  txn(
    compares: readonly TxnCompare[],
    success: readonly TxnOp[],
    failure?: readonly TxnOp[],
  ): Promise<TxnResult>;
  grantLease(ttlSeconds: number): Promise<Lease>;
  /** Drops history before `revision` (tests, and operators' maintenance). */
  compact(revision: number): Promise<void>;
  close(): void;
}

/** Leadership won by a campaign; writes are fenced with `fence` so a deposed leader's writes fail. */
export interface Leadership {
  readonly id: string;
  readonly lease: Lease;
  /** A compare that holds only while this candidate is still the leader. */
  readonly fence: TxnCompare;
  /** Called once when leadership is lost (lease lost, or the key taken away). */
  onLost(listener: (reason: string) => void): void;
  /** Gives up leadership now (revokes the lease), so another candidate takes over at once. */
  resign(): Promise<void>;
}
