/**
 * Diagnostics as compiler-style lines: `file:line:col: severity CODE: message [object]`.
 */
import type { Diagnostic } from '../../model/diagnostics.ts';
import type { Style } from './style.ts';

export function formatDiagnostic(d: Diagnostic, style: Style): string {
  const where = d.line > 0 ? `${d.file}:${d.line}:${d.column}` : d.file;
  const severity =
    d.severity === 'error'
      ? style.bad('error')
      : d.severity === 'warning'
        ? style.warn('warning')
        : style.dim('info');
  const object = d.object ? style.dim(` [${d.object}]`) : '';
  return `${where}: ${severity} ${d.code}: ${d.message}${object}`;
}

export function summarizeDiagnostics(diagnostics: readonly Diagnostic[]): string {
  const count = (s: Diagnostic['severity']): number => diagnostics.filter((d) => d.severity === s).length;
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${plural(count('error'), 'error')}, ${plural(count('warning'), 'warning')}, ${plural(count('info'), 'info')}`;
}
