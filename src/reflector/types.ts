/**
 * Contracts of the reflector (Contiv's KSR: the cluster reflected into etcd): the items and pages
 * it encodes, the changes a source feeds into the writer, and its figures. What it writes — the
 * key layout and the value codec its consumers share — is the reflected layer's (src/reflected/).
 */
import type { PageCursor, RawApiObject } from '../kube/types.ts';
import type { EncodedObject } from '../reflected/index.ts';

/** An object encoded for the writer, its value's digest computed once where it was encoded. */
export interface EncodedItem extends EncodedObject {
  readonly digest: string | undefined;
}

/** A list page of encoded items (null: an item of a kind that is not reflected). */
export interface EncodedPage extends PageCursor {
  readonly items: readonly (EncodedItem | null)[];
}

/**
 * One list/watch stream of a source: a kind, in one namespace or all. Each has its own
 * resourceVersion, recorded in etcd so a restart resumes where it left off.
 */
export interface StreamId {
  readonly kind: string;
  /** Undefined: all namespaces (or a cluster-scoped kind). */
  readonly namespace?: string;
}

/** What a source tells the writer. */
export interface SourceSink {
  /** A full list begins: every object of the stream follows, then `listDone`. */
  listStart(stream: StreamId): void;
  /** Objects of the list in progress. */
  listObjects(stream: StreamId, objects: readonly RawApiObject[]): void;
  /** Objects of the list in progress, already encoded (null: a kind that is not reflected). */
  listEncoded?(stream: StreamId, items: readonly (EncodedItem | null)[]): void;
  /** The list is complete at `resourceVersion`: keys of the stream not seen since listStart are deleted. */
  listDone(stream: StreamId, resourceVersion: string): void;
  /** The list was abandoned (it restarts): forget what listStart began. */
  listAbort(stream: StreamId): void;
  /** A watch event. */
  upsert(stream: StreamId, object: RawApiObject, resourceVersion: string): void;
  remove(stream: StreamId, object: RawApiObject, resourceVersion: string): void;
  /** A bookmark: nothing changed up to `resourceVersion`. */
  progress(stream: StreamId, resourceVersion: string): void;
}

/** Figures of a reflector's work, for logs and benchmarks. */
export interface ReflectorStats {
  /** Objects received (list items and watch events). */
  readonly received: number;
  /** Keys put or deleted in etcd. */
  readonly written: number;
  /** Objects whose reduced value was already in etcd (nothing written). */
  readonly unchanged: number;
  /** Transactions committed. */
  readonly transactions: number;
  /** Objects skipped as invalid. */
  readonly invalid: number;
  /** etcd's revision after the last commit. */
  readonly revision: number;
}
