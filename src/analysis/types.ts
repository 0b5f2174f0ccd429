/**
 * Contracts of the analysis layer: what `matrix`, `check` and `explain` compute, as data that
 * the formatters (text, json, csv, md) turn into output.
 */
import type { Endpoint, Protocol } from '../model/types.ts';
import type { PortSet } from '../semantics/index.ts';
import type { Verdict } from '../semantics/types.ts';

/** One column of a matrix: a port (number, or a name resolved per destination) and protocol. */
export interface PortQuery {
  readonly port: number | string;
  readonly protocol: Protocol;
}

export interface Matrix {
  readonly endpoints: readonly Endpoint[];
  /** Empty when the matrix holds allowed port sets instead of per-port answers. */
  readonly queries: readonly PortQuery[];
  /** allowed(from, to, query): endpoint indexes into `endpoints`, query index into `queries`. */
  allowed(from: number, to: number, query: number): boolean;
  /** Allowed ports between two endpoints (port-set mode only). */
  ports(from: number, to: number): PortSet;
  readonly stats: { readonly classes: number; readonly evaluations: number; readonly millis: number };
}

export interface CheckResult {
  readonly from: string;
  readonly to: string;
  readonly protocol: Protocol;
  readonly port: number;
  /** The port as the user gave it, when it was a name. */
  readonly portName?: string;
  readonly verdict: Verdict;
}
