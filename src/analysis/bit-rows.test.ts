/**
 * The bit-matrix transpose against a bit-by-bit one, on sizes around the 32-bit block edges.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { hasBit, setBit, transpose, wordsFor } from './bit-rows.ts';

describe('bit rows', () => {
  it('transpose moves bit (a, b) to (b, a) and nothing else', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 5, 31, 32, 33, 63, 64, 65, 100),
        fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 300 }),
        (n, points) => {
          const words = wordsFor(n);
          const bits = new Uint32Array(n * words);
          const expected = new Set<string>();
          for (const [x, y] of points) {
            const [a, b] = [x % n, y % n];
            setBit(bits, a * words, b);
            expected.add(`${b},${a}`);
          }
          const out = transpose(bits, n);
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++)
              assert.equal(hasBit(out, a * words, b), expected.has(`${a},${b}`), `${a},${b}`);
        },
      ),
      { numRuns: 200 },
    );
  });
});
