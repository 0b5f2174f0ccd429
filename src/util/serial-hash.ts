/**
 * A hash of a list of objects by their serial numbers, for interning lists found again by it and
 * confirmed item by item (the store's tier selections, the configurator's tables).
 */
export function serialListHash<T>(items: readonly T[], serialOf: (item: T) => number): number {
  let hash = items.length;
  for (const item of items) hash = (Math.imul(hash, 0x01000193) ^ serialOf(item)) | 0;
  // Kept in the small-integer range: a Map key outside it is a heap number, made and hashed anew
  // for every lookup.
  return hash & 0x3fffffff;
}
