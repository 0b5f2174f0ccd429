/**
 * Collects diagnostics with a bound: at most LISTED_PER_CODE of one code per file are kept, the
 * rest only counted, and one DIAGNOSTICS_TRUNCATED per file and code says how many were left
 * out. A List of millions of broken items would otherwise keep millions of diagnostics (several
 * gigabytes) and print them all; what was kept still says which errors the input has.
 */
import { makeDiagnostic, type Diagnostic, type DiagnosticCode } from '../model/diagnostics.ts';

/** Diagnostics of one code listed per file; beyond, they are counted. */
export const LISTED_PER_CODE = 1000;

export class DiagnosticSink {
  private readonly kept: Diagnostic[] = [];
  private readonly counts = new Map<string, { file: string; code: DiagnosticCode; count: number }>();

  add(diagnostic: Diagnostic): void {
    const key = `${diagnostic.file}\u0000${diagnostic.code}`;
    let entry = this.counts.get(key);
    if (!entry) {
      entry = { file: diagnostic.file, code: diagnostic.code, count: 0 };
      this.counts.set(key, entry);
    }
    if (++entry.count <= LISTED_PER_CODE) this.kept.push(diagnostic);
  }

  addAll(diagnostics: readonly Diagnostic[]): void {
    for (const d of diagnostics) this.add(d);
  }

  /** What was kept, and a note for each file and code that had more. */
  list(): Diagnostic[] {
    const result = this.kept.slice();
    for (const { file, code, count } of this.counts.values()) {
      if (count <= LISTED_PER_CODE) continue;
      const more = count - LISTED_PER_CODE;
      result.push(
        makeDiagnostic(
          'DIAGNOSTICS_TRUNCATED',
          `${more.toLocaleString('en-US')} more ${code} diagnostics in this file are not listed (${count.toLocaleString('en-US')} in all; the first ${LISTED_PER_CODE.toLocaleString('en-US')} are)`,
          { file },
        ),
      );
    }
    return result;
  }
}
