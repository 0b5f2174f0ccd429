/**
 * Diagnostics as compiler-style lines: `file:line:col: severity CODE: message [object]`.
 */
import type { Diagnostic } from '../../model/diagnostics.ts';
import { countOf } from '../../util/count-of.ts';
import type { Style } from './style.ts';
import { escapeControls } from '../../util/escape.ts';

export function formatDiagnostic(d: Diagnostic, style: Style): string {
  // Names and values from the input are escaped: they must not drive the terminal.
  const file = escapeControls(d.file);
  const where = d.line > 0 ? `${file}:${d.line}:${d.column}` : file;
  const severity =
    d.severity === 'error'
      ? style.bad('error')
      : d.severity === 'warning'
        ? style.warn('warning')
        : style.dim('info');
  const object = d.object ? style.dim(` [${escapeControls(d.object)}]`) : '';
  return `${where}: ${severity} ${d.code}: ${escapeControls(d.message)}${object}`;
}

export function summarizeDiagnostics(diagnostics: readonly Diagnostic[]): string {
  const count = (s: Diagnostic['severity']): number => diagnostics.filter((d) => d.severity === s).length;
  return `${countOf(count('error'), 'error')}, ${countOf(count('warning'), 'warning')}, ${countOf(count('info'), 'info')}`;
}
