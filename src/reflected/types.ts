/**
 * Contracts of the reflected cluster in etcd, shared by the reflector (which writes it) and its
 * consumers (the node agent, status, the lab): the kinds and their keys, and objects encoded to or
 * decoded from values.
 */
import type { DecodedObject } from '../ingest/types.ts';
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

/** A value read back from etcd, as a model object (for consumers such as the node agent). */
export interface DecodedValue {
  readonly key: string;
  readonly object: DecodedObject | undefined;
  readonly diagnostics: readonly Diagnostic[];
}
