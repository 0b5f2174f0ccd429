/**
 * Multi-word bitmaps of rule slots: one bit per slot, `width` 32-bit words per bitmap, all
 * bitmaps of one table in one growing Uint32Array (a value is an offset into it). Tables with
 * at most 32 slots use one word, so the common case costs one AND per map; more slots take more
 * words, never a limit (the seed stops at 64).
 */
export class BitmapStore {
  words: Uint32Array;
  private usedWords = 0;

  constructor(readonly width: number) {
    this.words = new Uint32Array(Math.max(width, 1) * 16);
  }

  /** A new, empty bitmap; returns its offset. */
  allocate(): number {
    if (this.usedWords + this.width > this.words.length) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    const offset = this.usedWords;
    this.usedWords += this.width;
    return offset;
  }

  set(offset: number, bit: number): void {
    const index = offset + (bit >>> 5);
    this.words[index] = ((this.words[index] as number) | (1 << (bit & 31))) >>> 0;
  }

  /** The words in use, as signed 32-bit words (a view, not a copy). */
  used(): Int32Array {
    return new Int32Array(this.words.buffer, this.words.byteOffset, this.usedWords);
  }

  /** The set bits of a bitmap, for rendering. */
  bitsOf(offset: number): number[] {
    const bits: number[] = [];
    for (let w = 0; w < this.width; w++) {
      const word = this.words[offset + w] as number;
      for (let b = 0; b < 32; b++) if ((word >>> b) & 1) bits.push(w * 32 + b);
    }
    return bits;
  }

  /** Bytes held (for memory figures). */
  get bytes(): number {
    return this.words.byteLength;
  }
}

export const wordsFor = (slots: number): number => Math.max(1, Math.ceil(slots / 32));
