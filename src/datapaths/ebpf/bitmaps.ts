/**
 * Bitmaps of rule slots as the BPF maps hold them: 64-bit words (here pairs of 32-bit words,
 * low first), a summary word with one bit per `stride` words, the first word inline in an entry
 * and the others in the `bits` map. Built from the classifier's bitmaps (32-bit words), which
 * number slots the same way.
 */

/** 64-bit words per bitmap for a table of `slots` slots (at least one). */
export const wordsFor = (slots: number): number => Math.max(1, Math.ceil(slots / 64));

/** Words per summary bit: one while a table has at most 64 words, more beyond. */
export const strideFor = (words: number): number => Math.max(1, Math.ceil(words / 64));

/**
 * The widest bitmap the maps encode: an entry numbers its words in 16 bits (`at` in struct
 * entry), and the program follows a summary bit over at most 1,024 words (MAX_STRIDE in
 * bpf/match.h) — 64 summary bits × 1,024 = 65,536 words, 4,194,304 rule slots. A wider
 * table would be written with word numbers wrapped and words the program never reads: wrong
 * verdicts, so the renderer refuses it instead.
 */
export const MAX_WORDS = 65_536;

/** A zeroed bitmap of `words` 64-bit words. */
export const emptyBitmap = (words: number): Uint32Array => new Uint32Array(2 * words);

/** A copy of the classifier's bitmap at `offset` (`width` 32-bit words) as `words` 64-bit words. */
export function bitmapFrom(store: Uint32Array, offset: number, width: number, words: number): Uint32Array {
  const bitmap = emptyBitmap(words);
  bitmap.set(store.subarray(offset, offset + width));
  return bitmap;
}

export function orInto(to: Uint32Array, from: Uint32Array): void {
  for (let i = 0; i < to.length; i++) to[i] = ((to[i] as number) | (from[i] as number)) >>> 0;
}

export function isEmpty(bitmap: Uint32Array): boolean {
  return bitmap.every((w) => w === 0);
}

export function sameBits(a: Uint32Array, b: Uint32Array): boolean {
  return a.length === b.length && a.every((w, i) => w === b[i]);
}

/** 64-bit word k. */
export function word(bitmap: Uint32Array, k: number): bigint {
  return BigInt(bitmap[2 * k] as number) | (BigInt(bitmap[2 * k + 1] as number) << 32n);
}

export function setWord(bitmap: Uint32Array, k: number, value: bigint): void {
  bitmap[2 * k] = Number(value & 0xffffffffn);
  bitmap[2 * k + 1] = Number(value >> 32n);
}

/** Bit b set when any of words [b*stride, (b+1)*stride) is not zero. */
export function summaryOf(bitmap: Uint32Array, stride: number): bigint {
  let summary = 0n;
  const words = bitmap.length / 2;
  for (let k = 0; k < words; k++)
    if ((bitmap[2 * k] as number) !== 0 || (bitmap[2 * k + 1] as number) !== 0)
      summary |= 1n << BigInt(Math.floor(k / stride));
  return summary;
}

/** Most significant word first, as `render --target bitmap` prints bitmaps. */
export function hex(bitmap: Uint32Array): string {
  let text = '';
  for (let i = bitmap.length - 1; i >= 0; i--) text += (bitmap[i] as number).toString(16).padStart(8, '0');
  return `0x${text}`;
}

/** The lowest set bit, or -1. */
export function lowestBit(bitmap: Uint32Array): number {
  for (let i = 0; i < bitmap.length; i++) {
    const w = bitmap[i] as number;
    if (w !== 0) return i * 32 + (31 - Math.clz32(w & -w));
  }
  return -1;
}

export function and(a: Uint32Array, b: Uint32Array): Uint32Array {
  return a.map((w, i) => (w & (b[i] as number)) >>> 0);
}

export function andNot(a: Uint32Array, b: Uint32Array): Uint32Array {
  return a.map((w, i) => (w & ~(b[i] as number)) >>> 0);
}
