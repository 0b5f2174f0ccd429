/**
 * Where policies can tell addresses apart: both ends of every block they name — NetworkPolicy's
 * ipBlock and its excepts, cluster policies' networks and outside blocks. Every address between
 * two consecutive cuts gets the same answer from every rule's address test (an endpoint's or a
 * node's address aside, which policies know by more than its value). Shared by the matrix's
 * outside ranges (analysis/address-ranges.ts) and flow attribution (flows/address-classes.ts).
 */
import type { Cluster } from '../model/types.ts';
import type { IpFamily } from '../net/ip.ts';
import { cidrInterval } from '../net/intervals.ts';

/** The policy sets to cut by: a cluster's enforced ones, or its staged ones. */
type PolicySets = Pick<Cluster, 'policies' | 'clusterPolicies'>;

/** Per family, the first address of each range (a block's first address, and the one after its last). */
export function addressCuts(sets: readonly PolicySets[]): Map<IpFamily, Set<bigint>> {
  const cuts = new Map<IpFamily, Set<bigint>>();
  const cut = (block: Parameters<typeof cidrInterval>[0]): void => {
    const interval = cidrInterval(block);
    let set = cuts.get(interval.family);
    if (!set) cuts.set(interval.family, (set = new Set()));
    set.add(interval.lo).add(interval.hi + 1n);
  };
  for (const { policies, clusterPolicies } of sets) {
    for (const policy of policies)
      for (const rule of [...policy.ingress, ...policy.egress])
        for (const peer of rule.peers ?? [])
          if (peer.type === 'ipBlock') for (const block of [peer.cidr, ...peer.except]) cut(block);
    for (const policy of clusterPolicies)
      for (const rule of [...policy.ingress, ...policy.egress])
        for (const peer of rule.peers)
          if (peer.type === 'networks' || peer.type === 'outside') for (const block of peer.cidrs) cut(block);
  }
  return cuts;
}
