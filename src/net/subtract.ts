/**
 * CIDR subtraction: a prefix minus a set of prefixes, as the minimal set of prefixes covering
 * exactly the remaining addresses (the seed's subtractSubnet, for IPv4 and IPv6). Used to turn
 * an ipBlock with `except` into permit-only rules.
 */
import { familyBits, makeCidr, type Cidr } from './ip.ts';

/**
 * Results by input text: clusters repeat the same ipBlocks across many policies, and the
 * prefixes are immutable values, so they are shared.
 */
const results = new Map<string, readonly Cidr[]>();
const MAX_CACHED = 100_000;

export function subtractCidrsCached(from: Cidr, remove: readonly Cidr[]): readonly Cidr[] {
  const key = `${from.text}-${remove.map((r) => r.text).join(',')}`;
  let result = results.get(key);
  if (!result) {
    if (results.size >= MAX_CACHED) results.clear();
    // A copy of the exact size: kept here and by every policy that has it (util/exact-array.ts).
    results.set(key, (result = subtractCidrs(from, remove).slice()));
  }
  return result;
}

/**
 * The remaining addresses are the gaps between the removed ranges (sorted, merged); each gap is
 * cut into the largest aligned prefixes that fit, which is the one minimal cover. Linear in the
 * number of removed prefixes and of results: an ipBlock with a thousand excepts costs a
 * thousand steps, not a split of the block down to every except.
 */
export function subtractCidrs(from: Cidr, remove: readonly Cidr[]): Cidr[] {
  const bits = familyBits(from.family);
  const first = from.base;
  const last = from.base + (1n << BigInt(bits - from.prefix)) - 1n;
  const holes: [bigint, bigint][] = [];
  for (const r of remove) {
    if (r.family !== from.family) continue;
    const start = r.base;
    const end = r.base + (1n << BigInt(bits - r.prefix)) - 1n;
    if (end < first || start > last) continue;
    holes.push([start < first ? first : start, end > last ? last : end]);
  }
  if (holes.length === 0) return [from];
  holes.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const result: Cidr[] = [];
  let next = first;
  for (const [start, end] of holes) {
    if (start > next) coverRange(from.family, bits, next, start - 1n, result);
    if (end + 1n > next) next = end + 1n;
  }
  if (next <= last) coverRange(from.family, bits, next, last, result);
  return result;
}

/** Appends the largest aligned prefixes that exactly cover [start, end], in address order. */
function coverRange(family: Cidr['family'], bits: number, start: bigint, end: bigint, out: Cidr[]): void {
  let at = start;
  while (at <= end) {
    // The largest block aligned at `at` that does not run past `end`.
    let size = 0;
    while (size < bits && ((at >> BigInt(size)) & 1n) === 0n && at + (1n << BigInt(size + 1)) - 1n <= end)
      size++;
    out.push(makeCidr(family, at, bits - size));
    at += 1n << BigInt(size);
  }
}
