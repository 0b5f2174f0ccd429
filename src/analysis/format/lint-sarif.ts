/**
 * Lint findings as SARIF 2.1.0, the format code hosts read to annotate pull requests: one run,
 * the catalogue entries used as rules (with their fix as help), each finding a result at its
 * file, line and column, with the object and field as a logical location and the related places
 * as related locations. A finding's fingerprint hashes its code, object (or file), field and
 * message — not its line — so a host can tell a finding that moved from a new one; two findings of
 * one code on one field (a rule shadowed by two others) differ by their message.
 */
import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import { catalogueEntry, LINT_CODES } from '../lint/catalogue.ts';
import type { Finding, FindingLocation, LintReport } from '../lint/types.ts';

const LEVEL = { error: 'error', warning: 'warning', info: 'note' } as const;

/** A relative path stays relative (to the repository root, where CI runs); absolute ones become file URIs. */
function artifactUri(file: string): string {
  const slashed = file.replace(/\\/g, '/');
  const encoded = slashed.split('/').map(encodeURIComponent).join('/');
  return isAbsolute(file) ? `file://${encoded}` : encoded;
}

/** Only real files have a physical location (not `<stdin>` or objects from a live cluster). */
function physicalLocation(where: FindingLocation): object | undefined {
  if (where.file.startsWith('<')) return undefined;
  return {
    artifactLocation: { uri: artifactUri(where.file) },
    ...(where.line > 0 ? { region: { startLine: where.line, startColumn: Math.max(1, where.column) } } : {}),
  };
}

function location(where: FindingLocation, id?: number, message?: string): object {
  const physical = physicalLocation(where);
  const logical = where.object
    ? [{ fullyQualifiedName: where.path ? `${where.object} ${where.path}` : where.object, kind: 'object' }]
    : undefined;
  return {
    ...(id !== undefined ? { id } : {}),
    ...(physical ? { physicalLocation: physical } : {}),
    ...(logical ? { logicalLocations: logical } : {}),
    ...(message ? { message: { text: message } } : {}),
  };
}

function fingerprint(finding: Finding): string {
  return createHash('sha256')
    .update(
      `${finding.code}\u0000${finding.object ?? finding.file}\u0000${finding.path ?? ''}\u0000${finding.message}`,
    )
    .digest('hex')
    .slice(0, 32);
}

export function lintSarif(report: LintReport, version: string): object {
  const codes = [...new Set<string>([...LINT_CODES, ...report.findings.map((f) => f.code)])];
  const ruleIndex = new Map(codes.map((code, i) => [code, i]));
  const rules = codes.map((code) => {
    const entry = catalogueEntry(code as Finding['code']);
    return {
      id: code,
      shortDescription: { text: entry.summary },
      help: { text: entry.hint },
      defaultConfiguration: { level: LEVEL[entry.severity] },
    };
  });
  const results = report.findings.map((finding) => ({
    ruleId: finding.code,
    ruleIndex: ruleIndex.get(finding.code) ?? 0,
    level: LEVEL[finding.severity],
    message: { text: `${finding.message}. Fix: ${finding.hint}` },
    locations: [location(finding)],
    ...(finding.related.length
      ? { relatedLocations: finding.related.map((r, i) => location(r, i + 1, r.message)) }
      : {}),
    partialFingerprints: { 'palisade/finding/v1': fingerprint(finding) },
  }));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'palisade', semanticVersion: version, rules } },
        columnKind: 'utf16CodeUnits',
        results,
      },
    ],
  };
}
