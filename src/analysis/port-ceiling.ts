/**
 * An upper bound of the ports one side of an endpoint can ever allow towards another endpoint of
 * the cluster — the union of its isolating policies' rules' ports, without asking which peers
 * match — so a pair whose source's egress bound and destination's ingress bound share no port is
 * known to allow nothing without evaluating either side. Rules whose peers are only ipBlocks
 * holding no endpoint address cannot admit an endpoint and are left out. Where the bound would
 * need more than the rules (not isolated, cluster policy, host network, the proposal's semantics,
 * a pod's own node) it is every port. Computed once per endpoint and side.
 */
import { cidrInterval, subtractIntervals, normalizeIntervals } from '../net/intervals.ts';
import type { Endpoint, NetworkPolicy, PolicyRule, Protocol, Semantics } from '../model/types.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  namedPortOf,
  portSetOf,
  selectingClusterPolicies,
  selectingPolicies,
  tierPlan,
  type ClusterIndex,
  type PortSet,
} from '../semantics/index.ts';
import { endpointIndexOf, type EndpointIndex } from './endpoint-index.ts';

type Side = 'egress' | 'ingress';
type PortEntry = { protocol: Protocol; from: number; to: number };
type PreparedSide =
  | 'all'
  | {
      readonly entries: readonly PortEntry[];
      readonly named: readonly { readonly name: string; readonly protocol: Protocol }[];
      /** The side's bound for every subject, when it names no port its subject resolves. */
      readonly everySubject?: PortSet;
    };

export class PortCeilings {
  private readonly memo: Record<Side, Map<Endpoint, PortSet>> = { egress: new Map(), ingress: new Map() };
  private endpoints?: EndpointIndex;
  private namedNumbers?: Map<string, PortSet>;
  private readonly ruleMayMatch = new Map<PolicyRule, boolean>();
  private readonly prepared: Record<Side, Map<NetworkPolicy, PreparedSide>> = {
    egress: new Map(),
    ingress: new Map(),
  };

  constructor(
    private readonly index: ClusterIndex,
    private readonly semantics: Semantics,
  ) {}

  /** The bound of one side of `subject` towards endpoints that are not on its own node's host network. */
  of(subject: Endpoint, side: Side): PortSet {
    let bound = this.memo[side].get(subject);
    if (!bound) this.memo[side].set(subject, (bound = this.compute(subject, side)));
    return bound;
  }

  /** The same, not kept when not known yet: for a question asked once of every endpoint. */
  once(subject: Endpoint, side: Side): PortSet {
    return this.memo[side].get(subject) ?? this.compute(subject, side);
  }

  private compute(subject: Endpoint, side: Side): PortSet {
    if (this.semantics !== 'v1' || subject.hostNetwork) return ALL_PORTS;
    const policies = selectingPolicies(this.index, subject, side, this.semantics);
    if (policies.length === 0) return ALL_PORTS;
    // Any tier's cluster policy — AdminNetworkPolicy's, Calico's tiers, Calico's and Cilium's
    // policy in the default tier beside NetworkPolicy — may allow what NetworkPolicy does not.
    if (this.index.cluster.clusterPolicies.length > 0) {
      const tiers = new Set<string>([
        'Admin',
        'Baseline',
        ...tierPlan(this.index.cluster).map((t) => t.name),
      ]);
      for (const tier of tiers)
        if (selectingClusterPolicies(this.index, subject, side, tier).length > 0) return ALL_PORTS;
    }
    // Each policy's side prepared once (its numbered ports as one set, the names it leaves to
    // the subject): a pod selected by one policy without named ports shares that policy's set,
    // and the others gather numbers, not sets (a set per port, united one by one, was most of
    // what a bound allocated; a diff asks it of every endpoint).
    if (policies.length === 1) {
      const only = this.sideOf(policies[0] as NetworkPolicy, side);
      if (only === 'all') return ALL_PORTS;
      if (only.everySubject) return only.everySubject;
    }
    const ranges: PortEntry[] = [];
    for (const policy of policies) {
      const prepared = this.sideOf(policy, side);
      if (prepared === 'all') return ALL_PORTS;
      for (const entry of prepared.entries) ranges.push(entry);
      for (const port of prepared.named) {
        const number = namedPortOf(subject, port.name, port.protocol);
        if (number !== undefined) ranges.push({ protocol: port.protocol, from: number, to: number });
      }
    }
    return ranges.length === 0 ? EMPTY_PORTS : portSetOf(ranges);
  }

  /**
   * One side of a policy, for every subject: every port (a rule that may admit an endpoint names
   * none), or its numbered ports (names resolved on any endpoint for egress) and the ingress
   * names each subject resolves on itself.
   */
  private sideOf(policy: NetworkPolicy, side: Side): PreparedSide {
    const memo = this.prepared[side];
    let found = memo.get(policy);
    if (!found) memo.set(policy, (found = this.prepare(policy, side)));
    return found;
  }

  private prepare(policy: NetworkPolicy, side: Side): PreparedSide {
    const entries: PortEntry[] = [];
    const named: { name: string; protocol: Protocol }[] = [];
    for (const rule of side === 'ingress' ? policy.ingress : policy.egress) {
      if (!this.mayMatchEndpoints(rule)) continue;
      if (!rule.ports || rule.ports.length === 0) return 'all';
      for (const port of rule.ports) {
        const protocol = port.protocol;
        if (port.port === undefined) entries.push({ protocol, from: 1, to: 65535 });
        else if (typeof port.port === 'number')
          entries.push({ protocol, from: port.port, to: port.endPort ?? port.port });
        else if (side === 'ingress') named.push({ name: port.port, protocol });
        else
          for (const [from, to] of this.numbersOfName(port.port, protocol).ranges[protocol])
            entries.push({ protocol, from, to });
      }
    }
    if (named.length > 0) return { entries, named };
    return { entries, named, everySubject: entries.length === 0 ? EMPTY_PORTS : portSetOf(entries) };
  }

  /** Every number a port name resolves to on some endpoint. */
  private numbersOfName(name: string, protocol: Protocol): PortSet {
    if (!this.namedNumbers) {
      const entries = new Map<string, { protocol: Protocol; from: number; to: number }[]>();
      for (const e of this.index.cluster.endpoints)
        for (const p of e.ports)
          if (p.name !== undefined) {
            const key = `${p.name}/${p.protocol}`;
            const list = entries.get(key) ?? [];
            list.push({ protocol: p.protocol, from: p.port, to: p.port });
            entries.set(key, list);
          }
      this.namedNumbers = new Map([...entries].map(([key, list]) => [key, portSetOf(list)]));
    }
    return this.namedNumbers.get(`${name}/${protocol}`) ?? EMPTY_PORTS;
  }

  /** False for a rule whose peers are all ipBlocks without an endpoint address in them. */
  private mayMatchEndpoints(rule: PolicyRule): boolean {
    let found = this.ruleMayMatch.get(rule);
    if (found === undefined) {
      const peers = rule.peers ?? [];
      found =
        peers.length === 0 ||
        peers.some((peer) => {
          if (peer.type !== 'ipBlock') return true;
          this.endpoints ??= endpointIndexOf(this.index.cluster);
          const index = this.endpoints;
          const ranges = subtractIntervals(
            [cidrInterval(peer.cidr)],
            normalizeIntervals(peer.except.map(cidrInterval)),
          );
          return ranges.some((range) => index.addressCount(range) > 0);
        });
      this.ruleMayMatch.set(rule, found);
    }
    return found;
  }
}
