/**
 * Contracts of the reflector (Contiv's KSR: the cluster reflected into etcd) and of what it
 * writes, for the node agent and other consumers: the kinds and their keys, the value codec, and
 * the changes a source feeds into the writer.
 */
import type { DecodedObject } from '../ingest/types.ts';
import type { PageCursor, RawApiObject } from '../kube/types.ts';
import type { Diagnostic } from '../model/types.ts';

/** A kind the reflector writes: its key segment (`pod`) and whether keys carry a namespace. */
export interface ReflectedKind {
  readonly kind: string;
  readonly segment: string;
  readonly namespaced: boolean;
}

/** An object ready for etcd: its key and reduced value, or nothing when it must not be there. */
export interface EncodedObject {
  readonly key: string;
  /** The reduced object as JSON; undefined when the object is invalid or left out (a finished pod). */
  readonly value: string | undefined;
  readonly diagnostics: readonly Diagnostic[];
}

/** An object encoded for the writer, its value's digest computed once where it was encoded. */
export interface EncodedItem extends EncodedObject {
  readonly digest: string | undefined;
}

/** A list page of encoded items (null: an item of a kind that is not reflected). */
export interface EncodedPage extends PageCursor {
  readonly items: readonly (EncodedItem | null)[];
}

/** A value read back from etcd, as a model object (for consumers such as the node agent). */
export interface DecodedValue {
  readonly key: string;
  readonly object: DecodedObject | undefined;
  readonly diagnostics: readonly Diagnostic[];
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
