/**
 * CIDR lists as the fewest nft interval elements: prefixes of one family merged into disjoint,
 * non-adjacent address ranges, each written as a prefix when it is one and as `a-b` otherwise.
 * An `except` splits a block into up to 32 prefixes per excepted range, and the blocks of many
 * policies overlap; merged, the elements stand for what the policies say (a block and its holes),
 * not for how the subtraction happened to cut it.
 */
import { formatIp, type Cidr, type IpFamily } from '../../net/ip.ts';

const bits = (family: IpFamily): number => (family === 4 ? 32 : 128);

/** The merged ranges of some prefixes (all of one family), in address order. */
function mergedRanges(cidrs: readonly Cidr[]): [bigint, bigint][] {
  const ranges = cidrs
    .map((c): [bigint, bigint] => [c.base, c.base + (1n << BigInt(bits(c.family) - c.prefix)) - 1n])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: [bigint, bigint][] = [];
  for (const [start, end] of ranges) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1] + 1n) {
      if (end > last[1]) last[1] = end;
    } else merged.push([start, end]);
  }
  return merged;
}

/** Interval-set elements for prefixes of one family: `a/len` for exact prefixes, else `a-b`. */
export function intervalElements(family: IpFamily, cidrs: readonly Cidr[]): string[] {
  return mergedRanges(cidrs).map(([start, end]) => {
    const size = end - start + 1n;
    const isPower = (size & (size - 1n)) === 0n;
    if (isPower && start % size === 0n) {
      const prefix = bits(family) - (size.toString(2).length - 1);
      return `${formatIp({ family, value: start })}/${prefix}`;
    }
    return `${formatIp({ family, value: start })}-${formatIp({ family, value: end })}`;
  });
}
