/**
 * Square bit matrices over equivalence classes, row by row: row `a` of an n × n matrix is
 * `words` 32-bit words at `a * words`. The compiled matrix computes whole rows at once (every
 * peer a rule admits, as one OR of words) and reads single bits when printing.
 */

export function wordsFor(n: number): number {
  return (n + 31) >>> 5;
}

export function hasBit(bits: Uint32Array, at: number, index: number): boolean {
  return ((bits[at + (index >>> 5)] as number) & (1 << (index & 31))) !== 0;
}

export function setBit(bits: Uint32Array, at: number, index: number): void {
  bits[at + (index >>> 5)] = (bits[at + (index >>> 5)] as number) | (1 << (index & 31));
}

/** A bit set over n classes with every bit below n set. */
export function fullRow(n: number): Uint32Array {
  const row = new Uint32Array(wordsFor(n));
  row.fill(0xffffffff);
  if (n & 31) row[row.length - 1] = (1 << (n & 31)) - 1;
  return row;
}

export function isEmpty(row: Uint32Array): boolean {
  for (let w = 0; w < row.length; w++) if (row[w] !== 0) return false;
  return true;
}

/**
 * The transpose of an n × n bit matrix: bit (b, a) of the result is bit (a, b) of `bits`. By
 * 32 × 32 blocks, each transposed in registers (the classic recursive swap of halves), so the
 * cost is a few operations per word rather than per bit.
 */
export function transpose(bits: Uint32Array, n: number): Uint32Array {
  const words = wordsFor(n);
  const out = new Uint32Array(words * n);
  const block = new Uint32Array(32);
  for (let rowWord = 0; rowWord < words; rowWord++) {
    for (let col = 0; col < words; col++) {
      // Rows 32·rowWord … of the input, the 32 bits of word `col`.
      for (let r = 0; r < 32; r++) {
        const row = rowWord * 32 + r;
        block[r] = row < n ? (bits[row * words + col] as number) : 0;
      }
      transpose32(block);
      for (let r = 0; r < 32; r++) {
        const row = col * 32 + r;
        if (row < n) out[row * words + rowWord] = block[r] as number;
      }
    }
  }
  return out;
}

/**
 * Transposes a 32 × 32 bit block in place, where bit c of word r is element (r, c): after it,
 * bit r of word c is that element.
 */
function transpose32(a: Uint32Array): void {
  let width = 16;
  let mask = 0x0000ffff;
  while (width !== 0) {
    for (let k = 0; k < 32; k = (k + width + 1) & ~width) {
      const t = ((a[k] as number) >>> width) ^ (a[k + width] as number);
      const swapped = t & mask;
      a[k] = (a[k] as number) ^ (swapped << width);
      a[k + width] = (a[k + width] as number) ^ swapped;
    }
    width >>>= 1;
    mask ^= mask << width;
  }
}
