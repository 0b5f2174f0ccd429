/**
 * Contracts of `palisade lint`: findings as data. The JSON output is exactly a `LintReport`, so
 * other tools (the web view, CI scripts) read the same fields documented in docs/LINT.md.
 */
import type { DiagnosticCode, Severity, SourceLocation } from '../../model/types.ts';
import type { LintCode } from './catalogue.ts';

export type { LintCode } from './catalogue.ts';

/** A place in the input: a file position, and the object and field it points at when known. */
export interface FindingLocation {
  readonly file: string;
  /** 1-based; 0 when unknown (an object without a file, e.g. from a live cluster). */
  readonly line: number;
  readonly column: number;
  /** `Kind ns/name` (or `Kind name` for cluster-scoped kinds). */
  readonly object?: string;
  /** Field path inside the object: `spec.ingress[0].from[1]`. */
  readonly path?: string;
}

/** Another place that explains a finding (the rules that make a rule redundant…). */
export interface RelatedLocation extends FindingLocation {
  readonly message: string;
}

export interface Finding extends FindingLocation {
  /** A lint code (docs/LINT.md) or, for problems found while reading input, a diagnostic code (docs/DIAGNOSTICS.md). */
  readonly code: LintCode | DiagnosticCode;
  readonly severity: Severity;
  /** One line: what is wrong here and why it matters. */
  readonly message: string;
  /** One line: how to fix it. */
  readonly hint: string;
  readonly related: readonly RelatedLocation[];
  /**
   * A finding said once for a class of endpoints no policy tells apart (`lint --by class`):
   * every member, as the per-row outputs name rows. Absent otherwise.
   */
  readonly members?: readonly string[];
}

/** How findings about endpoints are said: per workload (its pods together), per class, or auto. */
export type LintGrouping = 'workload' | 'class' | 'auto';

export interface LintReport {
  /** Sorted by file, line, column, code. */
  readonly findings: readonly Finding[];
  readonly summary: { readonly error: number; readonly warning: number; readonly info: number };
  /** Checks that could not run on this input, and why (e.g. no workloads to check selectors against). */
  readonly skipped: readonly { readonly check: string; readonly reason: string }[];
  /** Present when findings about endpoints were said per class: how many rows they stand for. */
  readonly classes?: { readonly findings: number; readonly classes: number };
}

/** Where an object's fields are in the input; built from the ingest layer's locators. */
export interface ObjectLocator {
  /** Position of the field at `path` inside the object `Kind ns/name`, or of its nearest existing ancestor. */
  locate(object: string, path: readonly (string | number)[]): SourceLocation | undefined;
}
