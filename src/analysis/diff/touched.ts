/**
 * Which other ends a side's change can reach. When only the NetworkPolicies deciding one side of
 * a unit changed (its pods are the same, each stays isolated or not as it was, and its cluster
 * policies are the same), the side is a union of the policies' rules: the changed policies'
 * rules — the old versions, matched in the old input, and the new ones in the new — are the only
 * ones whose contribution differs, so only the ends some peer of theirs matches can see a
 * different side. Everything else is skipped without an evaluation.
 */
import type { Endpoint, NetworkPolicy, Semantics, Tier } from '../../model/types.ts';
import type { IpInterval } from '../../net/intervals.ts';
import { ipBlockIntervals } from '../../net/intervals.ts';
import { listMatchesAll, selectingClusterPolicies, selectingPolicies } from '../../semantics/index.ts';
import type { AddressRange } from '../address-ranges.ts';
import { EndpointIndex } from '../endpoint-index.ts';
import type { SidedEvaluator, Side } from '../sided.ts';

/** The ends a changed side can reach: every one, or these endpoints (by object) and these ranges. */
export type Reach =
  'all' | { readonly endpoints: ReadonlySet<Endpoint>; readonly ranges: ReadonlySet<AddressRange> };

export class ReachFinder {
  private readonly oldIndex: EndpointIndex;
  private readonly newIndex: EndpointIndex;

  constructor(
    private readonly old: SidedEvaluator,
    private readonly next: SidedEvaluator,
    private readonly ranges: readonly AddressRange[],
    private readonly semantics: Semantics,
    private readonly keyOf: (policy: object) => string,
  ) {
    this.oldIndex = new EndpointIndex(old.cluster);
    this.newIndex = new EndpointIndex(next.cluster);
  }

  /** What the change of one side of a unit (members before and after, paired by fields) can reach. */
  reach(before: readonly Endpoint[], after: readonly Endpoint[], side: Side): Reach {
    if (before.length !== after.length) return 'all';
    const was = new Map<string, NetworkPolicy>();
    const is = new Map<string, NetworkPolicy>();
    for (let i = 0; i < before.length; i++) {
      const b = before[i] as Endpoint;
      const a = after[i] as Endpoint;
      const oldPolicies = selectingPolicies(this.old.index, b, side, this.semantics);
      const newPolicies = selectingPolicies(this.next.index, a, side, this.semantics);
      // Isolated before and not after (or the other way): every end changes.
      if (oldPolicies.length > 0 !== newPolicies.length > 0) return 'all';
      if (this.clusterKey(this.old, b, side) !== this.clusterKey(this.next, a, side)) return 'all';
      for (const p of oldPolicies) was.set(this.keyOf(p), p);
      for (const p of newPolicies) is.set(this.keyOf(p), p);
    }
    const endpoints = new Set<Endpoint>();
    const ranges = new Set<AddressRange>();
    for (const [key, policy] of was)
      if (!is.has(key) && this.add(policy, side, this.oldIndex, endpoints, ranges) === 'all') return 'all';
    for (const [key, policy] of is)
      if (!was.has(key) && this.add(policy, side, this.newIndex, endpoints, ranges) === 'all') return 'all';
    return { endpoints, ranges };
  }

  private clusterKey(evaluator: SidedEvaluator, endpoint: Endpoint, side: Side): string {
    return (['Admin', 'Baseline'] as Tier[])
      .flatMap((tier) => selectingClusterPolicies(evaluator.index, endpoint, side, tier))
      .map(this.keyOf)
      .join('\u0000');
  }

  /** Adds what the policy's rules for the side can match; 'all' when a rule matches anything. */
  private add(
    policy: NetworkPolicy,
    side: Side,
    index: EndpointIndex,
    endpoints: Set<Endpoint>,
    ranges: Set<AddressRange>,
  ): 'all' | undefined {
    for (const rule of side === 'ingress' ? policy.ingress : policy.egress) {
      if (listMatchesAll(rule.peers, this.semantics)) return 'all';
      for (const peer of rule.peers ?? []) {
        if (peer.type === 'selector') {
          for (const e of index.selectorPeerEndpoints(peer, policy.namespace)) endpoints.add(e);
          continue;
        }
        const intervals = ipBlockIntervals(peer.cidr, peer.except);
        for (const e of index.endpointsInIntervals(intervals)) endpoints.add(e);
        for (const range of this.ranges) if (overlaps(range.interval, intervals)) ranges.add(range);
      }
    }
    return undefined;
  }
}

function overlaps(interval: IpInterval, intervals: readonly IpInterval[]): boolean {
  return intervals.some((i) => i.family === interval.family && i.lo <= interval.hi && i.hi >= interval.lo);
}
