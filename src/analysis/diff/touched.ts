/**
 * Which other ends a side's change can reach. When only the NetworkPolicies deciding one side of
 * a unit changed (its pods are the same, each stays isolated or not as it was, and its cluster
 * policies are the same), the side is a union of the policies' rules: the changed policies'
 * rules — the old versions, matched in the old input, and the new ones in the new — are the only
 * ones whose contribution differs, so only the ends some peer of theirs matches can see a
 * different side. Everything else is skipped without an evaluation.
 *
 * A policy edited in place (same name on both sides, selecting the same members) is narrower still: rules equal in both
 * versions contribute alike and are left out; a rule whose ports stayed the same contributes
 * differently only to the ends its old and new peers match differently — the selector peers
 * only one version has, and the addresses in exactly one version's ipBlocks (an `except` moved
 * from one /16 to another reaches those two /16s, not the /8 around them).
 */
import type { Endpoint, NetworkPolicy, Peer, PolicyRule, Semantics } from '../../model/types.ts';
import type { IpInterval } from '../../net/intervals.ts';
import { ipBlockIntervals, normalizeIntervals, subtractIntervals } from '../../net/intervals.ts';
import { contentKey } from './objects.ts';
import {
  listMatchesAll,
  selectingClusterPolicies,
  selectingPolicies,
  tierPlan,
} from '../../semantics/index.ts';
import type { AddressRange } from '../address-ranges.ts';
import { endpointIndexOf, type EndpointIndex } from '../endpoint-index.ts';
import type { SidedEvaluator, Side } from '../sided.ts';

/** The ends a changed side can reach: every one, or these endpoints (by object) and these ranges. */
type Reach =
  'all' | { readonly endpoints: ReadonlySet<Endpoint>; readonly ranges: ReadonlySet<AddressRange> };

export class ReachFinder {
  private readonly oldIndex: EndpointIndex;
  private readonly newIndex: EndpointIndex;
  private hostNetworked?: readonly Endpoint[];

  constructor(
    private readonly old: SidedEvaluator,
    private readonly next: SidedEvaluator,
    private readonly ranges: readonly AddressRange[],
    private readonly semantics: Semantics,
    private readonly keyOf: (policy: object) => string,
  ) {
    this.oldIndex = endpointIndexOf(old.cluster);
    this.newIndex = endpointIndexOf(next.cluster);
  }

  /**
   * What a unit whose pods changed (added, removed, relabelled, moved) can reach on one side:
   * while each of its pods, before and after, is isolated that way by NetworkPolicy alone (v1),
   * a pair with it allows something only where one of those policies' rules matches the other
   * end — or the other end is host-networked (a pod's own node is always allowed). Every end
   * otherwise. Without this, a namespace added or a pod relabelled was compared with every
   * pod of the cluster, both ways.
   */
  wholeReach(before: readonly Endpoint[], after: readonly Endpoint[], side: Side): Reach {
    if (this.semantics !== 'v1') return 'all';
    const reached: Reached = { endpoints: new Set<Endpoint>(), ranges: new Set<AddressRange>() };
    const seen = new Set<NetworkPolicy>();
    for (const [members, evaluator, index] of [
      [before, this.old, this.oldIndex],
      [after, this.next, this.newIndex],
    ] as const) {
      for (const endpoint of members) {
        if (endpoint.hostNetwork) return 'all';
        const policies = selectingPolicies(evaluator.index, endpoint, side, this.semantics);
        if (policies.length === 0 || this.clusterKey(evaluator, endpoint, side) !== '') return 'all';
        for (const policy of policies) {
          if (seen.has(policy)) continue;
          seen.add(policy);
          if (this.addRules(rulesOf(policy, side), policy.namespace, index, reached) === 'all') return 'all';
        }
      }
    }
    this.hostNetworked ??= [...this.old.cluster.endpoints, ...this.next.cluster.endpoints].filter(
      (e) => e.hostNetwork,
    );
    for (const e of this.hostNetworked) reached.endpoints.add(e);
    return reached;
  }

  /** What the change of one side of a unit (members before and after, paired by fields) can reach. */
  reach(before: readonly Endpoint[], after: readonly Endpoint[], side: Side): Reach {
    if (before.length !== after.length) return 'all';
    const was = new Map<string, NetworkPolicy>();
    const is = new Map<string, NetworkPolicy>();
    const selectionChanged = new Set<string>();
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
      // A policy that selects a member on one side only changes all it contributes to it.
      const oldNames = new Set(oldPolicies.map(policyName));
      const newNames = new Set(newPolicies.map(policyName));
      for (const name of oldNames) if (!newNames.has(name)) selectionChanged.add(name);
      for (const name of newNames) if (!oldNames.has(name)) selectionChanged.add(name);
    }
    const reached: Reached = { endpoints: new Set<Endpoint>(), ranges: new Set<AddressRange>() };
    // Versions of one policy (by name) on both sides are compared rule by rule.
    const added = new Map<string, NetworkPolicy>();
    for (const [key, policy] of is) if (!was.has(key)) added.set(policyName(policy), policy);
    for (const [key, policy] of was) {
      if (is.has(key)) continue;
      const edited = selectionChanged.has(policyName(policy)) ? undefined : added.get(policyName(policy));
      if (edited) added.delete(policyName(policy));
      const outcome = edited
        ? this.addEdit(policy, edited, side, reached)
        : this.addRules(rulesOf(policy, side), policy.namespace, this.oldIndex, reached);
      if (outcome === 'all') return 'all';
    }
    for (const policy of added.values())
      if (this.addRules(rulesOf(policy, side), policy.namespace, this.newIndex, reached) === 'all')
        return 'all';
    return reached;
  }

  /** What an edit of one policy's rules for the side can reach (old version → new version). */
  private addEdit(old: NetworkPolicy, next: NetworkPolicy, side: Side, reached: Reached): 'all' | undefined {
    // Rules equal in both versions cancel out (as a multiset: a rule may appear twice).
    const remaining = [...rulesOf(next, side)];
    const gone: PolicyRule[] = [];
    for (const rule of rulesOf(old, side)) {
      const i = remaining.findIndex((r) => ruleKey(r) === ruleKey(rule));
      if (i >= 0) remaining.splice(i, 1);
      else gone.push(rule);
    }
    const { namespace } = old;
    if (gone.length !== remaining.length) {
      if (this.addRules(gone, namespace, this.oldIndex, reached) === 'all') return 'all';
      return this.addRules(remaining, namespace, this.newIndex, reached);
    }
    for (let i = 0; i < gone.length; i++) {
      const was = gone[i] as PolicyRule;
      const is = remaining[i] as PolicyRule;
      const outcome =
        contentKey(was.ports) === contentKey(is.ports)
          ? this.addPeerChange(was, is, namespace, reached)
          : (this.addRules([was], namespace, this.oldIndex, reached) ??
            this.addRules([is], namespace, this.newIndex, reached));
      if (outcome === 'all') return 'all';
    }
    return undefined;
  }

  /**
   * Two versions of a rule with the same ports: the ends one version's peers match and the
   * other's do not — within selector peers only one version has, or addresses in exactly one
   * version's ipBlocks.
   */
  private addPeerChange(
    was: PolicyRule,
    is: PolicyRule,
    namespace: string,
    reached: Reached,
  ): 'all' | undefined {
    const wasAll = listMatchesAll(was.peers, this.semantics);
    const isAll = listMatchesAll(is.peers, this.semantics);
    if (wasAll || isAll) return wasAll && isAll ? undefined : 'all';
    const keys = (peers: readonly Peer[]): Set<string> => new Set(peers.map((p) => contentKey(p)));
    const wasPeers = was.peers ?? [];
    const isPeers = is.peers ?? [];
    const wasKeys = keys(wasPeers);
    const isKeys = keys(isPeers);
    const selectors = (peers: readonly Peer[], other: Set<string>) =>
      peers.filter((p) => p.type === 'selector' && !other.has(contentKey(p)));
    this.addPeers(selectors(wasPeers, isKeys), namespace, this.oldIndex, reached);
    this.addPeers(selectors(isPeers, wasKeys), namespace, this.newIndex, reached);
    const blocks = (peers: readonly Peer[]): IpInterval[] =>
      normalizeIntervals(
        peers.flatMap((p) => (p.type === 'ipBlock' ? ipBlockIntervals(p.cidr, p.except) : [])),
      );
    const before = blocks(wasPeers);
    const after = blocks(isPeers);
    const changed = normalizeIntervals([
      ...subtractIntervals(before, after),
      ...subtractIntervals(after, before),
    ]);
    if (changed.length > 0) this.addIntervals(changed, reached);
    return undefined;
  }

  private clusterKey(evaluator: SidedEvaluator, endpoint: Endpoint, side: Side): string {
    return tierPlan(evaluator.index.cluster)
      .flatMap((tier) => selectingClusterPolicies(evaluator.index, endpoint, side, tier.name))
      .map(this.keyOf)
      .join('\u0000');
  }

  /** Adds what the rules can match; 'all' when a rule matches anything. */
  private addRules(
    rules: readonly PolicyRule[],
    namespace: string,
    index: EndpointIndex,
    reached: Reached,
  ): 'all' | undefined {
    for (const rule of rules) {
      if (listMatchesAll(rule.peers, this.semantics)) return 'all';
      this.addPeers(rule.peers ?? [], namespace, index, reached);
    }
    return undefined;
  }

  private addPeers(peers: readonly Peer[], namespace: string, index: EndpointIndex, reached: Reached): void {
    for (const peer of peers) {
      if (peer.type === 'selector') {
        for (const e of index.selectorPeerEndpoints(peer, namespace)) reached.endpoints.add(e);
        continue;
      }
      const intervals = ipBlockIntervals(peer.cidr, peer.except);
      for (const e of index.endpointsInIntervals(intervals)) reached.endpoints.add(e);
      for (const range of this.ranges) if (overlaps(range.interval, intervals)) reached.ranges.add(range);
    }
  }

  /** Addresses whose match changed: the endpoints holding them on either side, and the ranges. */
  private addIntervals(intervals: readonly IpInterval[], reached: Reached): void {
    for (const index of [this.oldIndex, this.newIndex])
      for (const e of index.endpointsInIntervals(intervals)) reached.endpoints.add(e);
    for (const range of this.ranges) if (overlaps(range.interval, intervals)) reached.ranges.add(range);
  }
}

interface Reached {
  readonly endpoints: Set<Endpoint>;
  readonly ranges: Set<AddressRange>;
}

const policyName = (policy: NetworkPolicy): string => `${policy.namespace}/${policy.name}`;

const rulesOf = (policy: NetworkPolicy, side: Side): readonly PolicyRule[] =>
  side === 'ingress' ? policy.ingress : policy.egress;

/** A rule by content, its position left out (a rule moved within its list contributes alike). */
const ruleKey = (rule: PolicyRule): string => contentKey({ peers: rule.peers, ports: rule.ports });

function overlaps(interval: IpInterval, intervals: readonly IpInterval[]): boolean {
  return intervals.some((i) => i.family === interval.family && i.lo <= interval.hi && i.hi >= interval.lo);
}
