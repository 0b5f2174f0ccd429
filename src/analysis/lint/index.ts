/**
 * `palisade lint`: every check of the catalogue over one cluster, plus the problems found while
 * reading the input (as findings with their diagnostic codes, so one report — and one SARIF
 * file — holds everything a pull request should be told).
 */
import type { Diagnostic } from '../../model/diagnostics.ts';
import type { Cluster, Semantics } from '../../model/types.ts';
import { catalogueEntry, type LintCode } from './catalogue.ts';
import { denyOnlyIsolation } from './check-deny-only.ts';
import { egressWithoutDns } from './check-dns.ts';
import { redundancy } from './check-redundancy.ts';
import { shadowing } from './check-shadowing.ts';
import { ipBlocks, ignoredByPolicyTypes, splitSelectors } from './checks-rules.ts';
import { notIsolated, peerMatchesNothing, selectsNothing } from './checks-selection.ts';
import { portChecks } from './checks-ports.ts';
import { serviceChecks } from './checks-services.ts';
import { LintContext, type LintCheck } from './context.ts';
import { NO_LOCATOR } from './locate.ts';
import type { Finding, LintGrouping, LintReport, ObjectLocator } from './types.ts';

export { LINT_CATALOGUE, LINT_CODES, catalogueEntry, isKnownCode } from './catalogue.ts';
export { objectLocator, NO_LOCATOR } from './locate.ts';
export type * from './types.ts';

const CHECKS: readonly LintCheck[] = [
  selectsNothing,
  peerMatchesNothing,
  notIsolated,
  ignoredByPolicyTypes,
  splitSelectors,
  ipBlocks,
  portChecks,
  egressWithoutDns,
  redundancy,
  shadowing,
  denyOnlyIsolation,
  serviceChecks,
];

/** Checks that compare selectors with the input's pods and workloads: without any, they would find only noise. */
const NEED_ENDPOINTS: readonly LintCode[] = [
  'POLICY_SELECTS_NOTHING',
  'PEER_MATCHES_NOTHING',
  'POLICY_REDUNDANT',
  'RULE_REDUNDANT',
  'RULE_SHADOWED',
  'DENY_POLICY_ISOLATES',
  'SERVICE_SELECTS_NOTHING',
];

interface LintOptions {
  /** Default `v1`. */
  readonly semantics?: Semantics;
  /** Report only these codes (lint or diagnostic codes); every code when absent or empty. */
  readonly only?: readonly string[];
  /** Never report these codes. */
  readonly skip?: readonly string[];
  /** Where objects' fields are in the input files; without one, findings point at whole objects. */
  readonly locator?: ObjectLocator;
  /** Problems found while reading the input: errors and warnings become findings. */
  readonly diagnostics?: readonly Diagnostic[];
  /** Called before each check with (checks done, checks to run), for progress display. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Findings about endpoints (WORKLOAD_NOT_ISOLATED) per workload (the default), per class of
   * endpoints no policy tells apart, or auto: per class past 1,000 findings when classes are at
   * most half as many.
   */
  readonly by?: LintGrouping;
}

export function lintCluster(cluster: Cluster, options: LintOptions = {}): LintReport {
  const only = options.only?.length ? new Set(options.only) : undefined;
  const skip = new Set(options.skip ?? []);
  const wanted = (code: string): boolean => (!only || only.has(code)) && !skip.has(code);
  const context = new LintContext(
    cluster,
    options.locator ?? NO_LOCATOR,
    options.semantics ?? 'v1',
    options.by ?? 'workload',
  );
  const findings: Finding[] = [];
  for (const diagnostic of options.diagnostics ?? []) {
    if (diagnostic.severity === 'info' || !wanted(diagnostic.code)) continue;
    findings.push(fromDiagnostic(diagnostic));
  }
  const skipped: { check: string; reason: string }[] = [];
  if (!context.hasEndpoints) {
    const codes = NEED_ENDPOINTS.filter(wanted);
    if (codes.length)
      skipped.push({
        check: codes.join(', '),
        reason: 'the input has no pods or workloads to compare selectors with',
      });
  }
  const checks = CHECKS.filter((check) => check.codes.some(wanted));
  for (const [i, check] of checks.entries()) {
    options.onProgress?.(i, checks.length);
    for (const finding of check.run(context)) {
      if (!wanted(finding.code)) continue;
      if (!context.hasEndpoints && NEED_ENDPOINTS.includes(finding.code as LintCode)) continue;
      findings.push(finding);
    }
  }
  findings.sort(
    (a, b) =>
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) ||
      (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
  );
  const summary = { error: 0, warning: 0, info: 0 };
  for (const f of findings) summary[f.severity]++;
  return {
    findings,
    summary,
    skipped,
    ...(context.groupedByClass ? { classes: context.groupedByClass } : {}),
  };
}

function fromDiagnostic(d: Diagnostic): Finding {
  return {
    code: d.code,
    severity: d.severity,
    message: d.message,
    hint: catalogueEntry(d.code).hint,
    file: d.file,
    line: d.line,
    column: d.column,
    ...(d.object !== undefined ? { object: d.object } : {}),
    ...(d.path !== undefined ? { path: d.path } : {}),
    related: [],
  };
}
