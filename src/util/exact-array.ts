/**
 * Arrays kept for the life of a model or store object, at their exact size. An array grown by
 * `push` or returned by `filter` reserves room for 17 elements after its first one (V8 grows
 * backing stores by half plus 16), so a one-element list costs 176 bytes instead of 40; with
 * hundreds of thousands of such lists in a large cluster that was a tenth of the heap. `slice`
 * copies into a backing store of the exact length.
 */
export function exactArray<T>(items: readonly T[]): T[] {
  return items.slice();
}
