/**
 * Lint findings for people: compiler-style lines (`file:line:col: severity CODE: message`), each
 * with its fix and the related places, then a one-line summary.
 */
import type { Finding, FindingLocation, LintReport } from '../lint/types.ts';
import type { Style } from './style.ts';
import { escapeControls } from '../../util/escape.ts';

function place(where: FindingLocation): string {
  const file = escapeControls(where.file);
  return where.line > 0 ? `${file}:${where.line}:${where.column}` : file;
}

function formatFinding(finding: Finding, style: Style): string {
  const severity =
    finding.severity === 'error'
      ? style.bad('error')
      : finding.severity === 'warning'
        ? style.warn('warning')
        : style.dim('info');
  // Messages quote the input (names, keys, values): control characters in it are shown escaped,
  // so a manifest can never drive the terminal.
  const lines = [`${place(finding)}: ${severity} ${finding.code}: ${escapeControls(finding.message)}`];
  lines.push(style.dim(`    fix: ${escapeControls(finding.hint)}`));
  for (const r of finding.related) lines.push(style.dim(`    see ${place(r)}: ${escapeControls(r.message)}`));
  return lines.join('\n');
}

export function formatLintText(report: LintReport, style: Style): string {
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const { error, warning, info } = report.summary;
  const out = report.findings.map((f) => formatFinding(f, style) + '\n');
  for (const s of report.skipped) out.push(style.dim(`not checked: ${s.check} (${s.reason})\n`));
  out.push(`${plural(error, 'error')}, ${plural(warning, 'warning')}, ${plural(info, 'info')}\n`);
  return out.join('');
}
