/**
 * Address sets as sorted, disjoint, inclusive intervals of one family. CIDR prefixes with
 * `except` holes are not prefixes any more, and the analyses that compare address sets
 * (redundancy, external ranges in a diff) need unions, differences and "a point of this set
 * that is none of these addresses" — all simple on intervals.
 */
import { familyBits, formatIp, makeCidr, type Cidr, type IpAddress, type IpFamily } from './ip.ts';

export interface IpInterval {
  readonly family: IpFamily;
  readonly lo: bigint;
  readonly hi: bigint;
}

/** The addresses of a prefix. */
export function cidrInterval(cidr: Cidr): IpInterval {
  const size = 1n << BigInt(familyBits(cidr.family) - cidr.prefix);
  return { family: cidr.family, lo: cidr.base, hi: cidr.base + size - 1n };
}

/** Every address of a family. */
export function familyInterval(family: IpFamily): IpInterval {
  return { family, lo: 0n, hi: (1n << BigInt(familyBits(family))) - 1n };
}

/** Sorted, merged (adjacent intervals join), per family with IPv4 first. */
export function normalizeIntervals(intervals: readonly IpInterval[]): IpInterval[] {
  const sorted = [...intervals].sort(
    (a, b) => a.family - b.family || (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0),
  );
  const result: IpInterval[] = [];
  for (const next of sorted) {
    const last = result[result.length - 1];
    if (last && last.family === next.family && next.lo <= last.hi + 1n) {
      if (next.hi > last.hi) result[result.length - 1] = { ...last, hi: next.hi };
    } else {
      result.push(next);
    }
  }
  return result;
}

/** `a` minus `b`; both normalized. */
export function subtractIntervals(a: readonly IpInterval[], b: readonly IpInterval[]): IpInterval[] {
  const result: IpInterval[] = [];
  for (const piece of a) {
    let lo = piece.lo;
    for (const cut of b) {
      if (cut.family !== piece.family || cut.hi < lo || cut.lo > piece.hi) continue;
      if (cut.lo > lo) result.push({ family: piece.family, lo, hi: cut.lo - 1n });
      lo = cut.hi + 1n;
      if (lo > piece.hi) break;
    }
    if (lo <= piece.hi) result.push({ family: piece.family, lo, hi: piece.hi });
  }
  return result;
}

/** The addresses of an ipBlock: its cidr minus every except. */
export function ipBlockIntervals(cidr: Cidr, except: readonly Cidr[]): IpInterval[] {
  return subtractIntervals([cidrInterval(cidr)], normalizeIntervals(except.map(cidrInterval)));
}

/**
 * Whether `ip` lies in one of `sorted` (normalized: sorted by family and start, disjoint), by
 * binary search — for address sets of thousands of intervals, where a scan per address would
 * make every question about them cost their size.
 */
export function sortedIntervalsContain(sorted: readonly IpInterval[], ip: IpAddress): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const interval = sorted[mid] as IpInterval;
    if (interval.family < ip.family || (interval.family === ip.family && interval.hi < ip.value))
      lo = mid + 1;
    else if (interval.family > ip.family || interval.lo > ip.value) hi = mid - 1;
    else return true;
  }
  return false;
}

/** The fewest prefixes covering exactly the interval (at most 2 × bits of them). */
export function intervalCidrs(interval: IpInterval): Cidr[] {
  const bits = familyBits(interval.family);
  const result: Cidr[] = [];
  let lo = interval.lo;
  while (lo <= interval.hi) {
    // The largest aligned block starting at lo that stays inside the interval.
    let size = 1;
    while (size <= bits) {
      const block = 1n << BigInt(size);
      if (lo % block !== 0n || lo + block - 1n > interval.hi) break;
      size++;
    }
    const hostBits = size - 1;
    result.push(makeCidr(interval.family, lo, bits - hostBits));
    lo += 1n << BigInt(hostBits);
  }
  return result;
}

/**
 * An interval for people: its prefixes when there are few (`10.0.0.0/8`), else its ends
 * (`0.0.0.0-9.255.255.255`), as netpol-analyzer prints ranges.
 */
export function formatInterval(interval: IpInterval): string {
  const cidrs = intervalCidrs(interval);
  if (cidrs.length <= 2) return cidrs.map((c) => c.text).join(',');
  const at = (value: bigint): string => formatIp({ family: interval.family, value });
  return `${at(interval.lo)}-${at(interval.hi)}`;
}
