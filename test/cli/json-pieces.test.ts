/**
 * JSON written in pieces is byte for byte JSON.stringify(value, null, 2), on random plain data
 * and on the compile report's shape.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jsonPieces } from '../../src/cli/json-pieces.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

const joined = (value: unknown): string => [...jsonPieces(value, '\n')].join('');

describe('JSON in pieces', () => {
  it('equals JSON.stringify(value, null, 2) for random plain data', () => {
    const plain = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double({ noNaN: true }),
        fc.string(),
        fc.constant(undefined),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.oneof(plain, fc.dictionary(fc.string(), plain, { maxKeys: 6 })), (value) => {
        const expected = JSON.stringify(value, null, 2);
        if (expected === undefined) return; // nothing to write for a top-level undefined
        assert.equal(joined(value), expected + '\n');
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it('writes a large array item by item, not as one string', () => {
    const tables = Array.from({ length: 1000 }, (_, i) => ({
      id: `t${i}`,
      rules: [{ allow: true }],
      usedBy: i,
    }));
    const value = { pods: 3, tables, empty: [], gone: undefined, stats: { millis: 1.5 } };
    const pieces = [...jsonPieces(value, '\n')];
    assert.equal(pieces.join(''), JSON.stringify(value, null, 2) + '\n');
    assert.ok(pieces.length > tables.length, `${pieces.length} pieces`);
    assert.ok(Math.max(...pieces.map((p) => p.length)) < 200);
  });
});
