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

/** Codes said once per run: the first in full, the rest as one line after it (`-v`: each). */
const ONCE_PER_RUN: ReadonlySet<string> = new Set(['PEER_SHAPE_DEPRECATED']);

/**
 * The lines for a list of diagnostics, as people read them: a warning repeated for every peer
 * of an old shape is said once, with where else it applies; skipped kinds are one line with
 * their counts (`-o json` still lists each). `each` keeps every repeated warning.
 */
export function formatDiagnostics(diagnostics: readonly Diagnostic[], style: Style, each = false): string[] {
  const lines: string[] = [];
  const repeats = new Map<string, Diagnostic[]>();
  const skipped: Diagnostic[] = [];
  for (const d of diagnostics) {
    if (d.code === 'KIND_SKIPPED') {
      skipped.push(d);
      continue;
    }
    if (!each && ONCE_PER_RUN.has(d.code)) {
      const seen = repeats.get(d.code);
      if (seen) {
        seen.push(d);
        continue;
      }
      repeats.set(d.code, []);
    }
    lines.push(formatDiagnostic(d, style));
  }
  for (const [code, more] of repeats)
    if (more.length > 0) {
      const places = more
        .slice(0, 3)
        .map((d) => (d.line > 0 ? `${escapeControls(d.file)}:${d.line}` : escapeControls(d.file)));
      const rest = more.length > 3 ? ` and ${more.length - 3} more` : '';
      lines.push(
        style.dim(
          `(the same ${code} for ${countOf(more.length, 'more place')}: ${places.join(', ')}${rest}; -v shows each)`,
        ),
      );
    }
  const [first] = skipped;
  if (first && skipped.length === 1) lines.push(formatDiagnostic(first, style));
  else if (first) {
    const kinds = new Map<string, number>();
    for (const d of skipped) {
      const kind = /^\S+ (\S+) is not analysed/.exec(d.message)?.[1] ?? 'object';
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    const list = [...kinds].map(([kind, n]) => (n > 1 ? `${kind} ×${n}` : kind)).join(', ');
    lines.push(
      `${style.dim('info')} KIND_SKIPPED: ${skipped.length} objects of kinds Palisade does not analyse were skipped (${escapeControls(list)}; -o json lists each)`,
    );
  }
  return lines;
}
