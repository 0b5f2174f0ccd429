/**
 * CIDR subtraction: a prefix minus a set of prefixes, as the minimal set of prefixes covering
 * exactly the remaining addresses (the seed's subtractSubnet, for IPv4 and IPv6). Used to turn
 * an ipBlock with `except` into permit-only rules.
 */
import { cidrCovers, familyBits, makeCidr, type Cidr } from './ip.ts';

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
    results.set(key, (result = subtractCidrs(from, remove)));
  }
  return result;
}

export function subtractCidrs(from: Cidr, remove: readonly Cidr[]): Cidr[] {
  const relevant = remove.filter(
    (r) => r.family === from.family && (cidrCovers(from, r) || cidrCovers(r, from)),
  );
  if (relevant.some((r) => cidrCovers(r, from))) return [];
  if (relevant.length === 0) return [from];
  // Split in halves, recursing only into halves that still overlap something to remove.
  const bits = familyBits(from.family);
  const childPrefix = from.prefix + 1;
  const half = 1n << BigInt(bits - childPrefix);
  const low = makeCidr(from.family, from.base, childPrefix);
  const high = makeCidr(from.family, from.base + half, childPrefix);
  return [...subtractCidrs(low, relevant), ...subtractCidrs(high, relevant)];
}
