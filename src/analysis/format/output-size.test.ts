/**
 * Matrix size estimates at sizes where the rows themselves are many: 200,000 rows (a matrix by
 * pod of a large cluster, asked for one port) are estimated, not a stack overflow.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Matrix } from '../types.ts';
import type { OutsideClass } from '../outside.ts';
import { estimateMatrixExtras, estimateMatrixOutput } from './output-size.ts';

const ROWS = 200_000;

function wideMatrix(): Matrix {
  const rows = Array.from({ length: ROWS }, (_, i) => ({
    id: `ns/pod-${i}`,
    label: `ns/pod-${i}`,
    kind: 'Pod',
  }));
  return { rows, queries: [{ port: 80, protocol: 'TCP' }] } as unknown as Matrix;
}

it('a table of 200,000 rows for one port is estimated (text and Markdown), with its ranges', () => {
  const matrix = wideMatrix();
  for (const format of ['text', 'md']) {
    const estimate = estimateMatrixOutput(matrix, format, 100e6);
    // Each of the rows is a line at least as wide as its cells: 3 (text) or 5 (Markdown) bytes each.
    assert.ok(estimate.bytes > ROWS * ROWS * 3, `${format}: ${estimate.bytes}`);
    assert.equal(estimate.lines, ROWS + 2);
    const outside = [
      { label: '0.0.0.0/0', out: [], into: [], outSome: [], intoSome: [] },
    ] as unknown as OutsideClass[];
    const extras = estimateMatrixExtras(matrix, { outside }, format);
    assert.ok(extras.bytes > ROWS * 3, `${format} ranges: ${extras.bytes}`);
  }
});
