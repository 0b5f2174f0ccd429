/**
 * Port ranges as prefixes (the only form a longest-prefix-match map can hold): the minimal set
 * of aligned blocks covering a range, and the small helpers keys are built from.
 */
import type { PortPrefix } from './types.ts';

export const PORT_BITS = 16;

/** The minimal prefixes covering [from, to] (0 ≤ from ≤ to ≤ 65535). */
export function portRangePrefixes(from: number, to: number): PortPrefix[] {
  const result: PortPrefix[] = [];
  let start = from;
  while (start <= to) {
    // The largest aligned block starting at `start` that does not pass `to`.
    let size = start === 0 ? 1 << PORT_BITS : start & -start;
    while (start + size - 1 > to) size >>= 1;
    result.push({ value: start, len: PORT_BITS - Math.log2(size) });
    start += size;
  }
  return result;
}

/** The prefix of length `len` containing `port`. */
export function prefixOf(port: number, len: number): number {
  const shift = PORT_BITS - len;
  return shift >= PORT_BITS ? 0 : (port >>> shift) << shift;
}

/** Does prefix `a` contain prefix `b` (or equal it)? */
export function prefixContains(a: PortPrefix, b: PortPrefix): boolean {
  return a.len <= b.len && prefixOf(b.value, a.len) === a.value;
}

export function prefixText(p: PortPrefix): string {
  if (p.len === 0) return '*';
  const size = 1 << (PORT_BITS - p.len);
  return size === 1 ? String(p.value) : `${p.value}-${p.value + size - 1}`;
}

/** One number per (protocol, prefix): protocol (8 bits), length (5 bits), value (16 bits). */
export function keyNumber(protocol: number, len: number, value: number): number {
  return (protocol * 32 + len) * 65536 + value;
}
