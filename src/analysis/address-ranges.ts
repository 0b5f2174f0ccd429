/**
 * The address space outside the cluster as the ranges policies can tell apart: cut at both ends
 * of every ipBlock, except and network of the given clusters, so every address of a range gets
 * the same verdict from every rule. Each range carries a representative address that is no
 * endpoint's and no node's (a range holding only such addresses is not outside the cluster and
 * is left out), so evaluating the representative answers for the whole range.
 */
import type { Cluster } from '../model/types.ts';
import type { IpAddress, IpFamily } from '../net/ip.ts';
import { familyInterval, type IpInterval } from '../net/intervals.ts';
import { addressCuts } from '../semantics/index.ts';

export interface AddressRange {
  readonly interval: IpInterval;
  readonly representative: IpAddress;
}

export function addressRanges(clusters: readonly Cluster[]): AddressRange[] {
  const cuts = addressCuts(clusters);
  const used = new Map<IpFamily, bigint[]>();
  const use = (ip: IpAddress): void => {
    const list = used.get(ip.family);
    if (list) list.push(ip.value);
    else used.set(ip.family, [ip.value]);
  };
  for (const cluster of clusters) {
    for (const e of cluster.endpoints) for (const ip of e.ips) use(ip);
    for (const node of cluster.nodes.values()) for (const ip of node.addresses) use(ip);
  }
  // A family nobody uses is left out; with no address anywhere, IPv4 stands for "outside".
  const families = new Set<IpFamily>([...cuts.keys(), ...used.keys()]);
  if (families.size === 0) families.add(4);
  const ranges: AddressRange[] = [];
  for (const family of [4, 6] as const) {
    if (!families.has(family)) continue;
    const whole = familyInterval(family);
    const points = [...(cuts.get(family) ?? []), whole.lo, whole.hi + 1n]
      .filter((p) => p >= whole.lo && p <= whole.hi + 1n)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const taken = [...new Set(used.get(family) ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let t = 0;
    for (let i = 0; i + 1 < points.length; i++) {
      const lo = points[i] as bigint;
      const hi = (points[i + 1] as bigint) - 1n;
      if (hi < lo) continue;
      // The lowest address of the range no endpoint or node has.
      while (t < taken.length && (taken[t] as bigint) < lo) t++;
      let candidate = lo;
      let k = t;
      while (k < taken.length && taken[k] === candidate) {
        candidate++;
        k++;
      }
      if (candidate > hi) continue;
      ranges.push({ interval: { family, lo, hi }, representative: { family, value: candidate } });
    }
  }
  return ranges;
}
