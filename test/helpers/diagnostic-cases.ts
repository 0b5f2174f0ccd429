/**
 * A table of bad inputs, each expected to produce one diagnostic code at one line and column.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';
import type { DiagnosticCode } from '../../src/model/diagnostics.ts';

export interface DiagnosticCase {
  readonly name: string;
  readonly text: string;
  readonly code: DiagnosticCode;
  readonly line: number;
  readonly column: number;
  readonly path?: string;
}

/** One test per case: the code is reported, in the file, at that position (and path, when given). */
export function itReportsEach(cases: readonly DiagnosticCase[], file = 'in.yaml'): void {
  for (const c of cases) {
    void it(`${c.name} → ${c.code} at ${c.line}:${c.column}`, () => {
      const { diagnostics } = loadFromTexts([{ name: file, text: c.text }], 'v1');
      const found = diagnostics.find((d) => d.code === c.code);
      assert.ok(
        found,
        `expected ${c.code}, got ${diagnostics.map((d) => `${d.code}: ${d.message}`).join('; ') || 'nothing'}`,
      );
      assert.equal(found.file, file);
      assert.deepEqual([found.line, found.column], [c.line, c.column], found.message);
      if (c.path) assert.equal(found.path, c.path);
    });
  }
}
