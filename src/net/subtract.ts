/**
 * CIDR subtraction: a prefix minus a set of prefixes, as the minimal set of prefixes covering
 * exactly the remaining addresses (the seed's subtractSubnet, for IPv4 and IPv6). Used to turn
 * an ipBlock with `except` into permit-only rules.
 */
import { cidrCovers, familyBits, makeCidr, type Cidr } from './ip.ts';

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
