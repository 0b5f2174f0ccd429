/**
 * Square bit matrices over equivalence classes, row by row: row `a` of an n × n matrix is
 * `words` 32-bit words at `a * words` — the reference matrix's answers per queried port.
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
