/**
 * Allowed ports between two addresses, one side at a time and memoized. A side (the egress of the
 * source, or the ingress of the destination) depends on its subject's policies and on a handful
 * of facts about the other address: which of those policies' peers it matches, what the named
 * ports they use resolve to on it, whether it is the subject's own node, the address family. That
 * is the side's *signature* of the other address; the reference evaluator's `sidePorts` is called
 * once per (subject, signature) and shared by every other address with the same signature.
 *
 * This is what lets a diff compare the two sides of a pair separately (an unchanged side need not
 * be evaluated at all where the changed side did not change), and a row of 10,000 pairs cost a
 * few side evaluations plus 10,000 signatures. The signature reads the evaluator's own matching
 * functions; a property test holds `ports` to `allowedPorts` on random clusters.
 */
import { namedPortTargets } from '../model/cluster-policy.ts';
import type { Cluster, Endpoint, Semantics } from '../model/types.ts';
import type { IpFamily } from '../net/ip.ts';
import { PortCeilings } from './port-ceiling.ts';
import { portSetsMeet } from '../model/port-set.ts';
import {
  ALL_PORTS,
  clusterPeerMatches,
  EMPTY_PORTS,
  indexCluster,
  intersectPorts,
  isNoPorts,
  isOwnNode,
  listMatchesAll,
  peerMatches,
  resolveNamedPort,
  selectingClusterPolicies,
  selectingPolicies,
  sidePorts,
  tierPlan,
  type Address,
  type ClusterIndex,
  type PortSet,
} from '../semantics/index.ts';

export type Side = 'egress' | 'ingress';

// Shared family lists (compared by identity, never changed).
const NONE: readonly IpFamily[] = [];
const ONLY_V4: readonly IpFamily[] = [4];
const ONLY_V6: readonly IpFamily[] = [6];
const BOTH: readonly IpFamily[] = [4, 6];
const NO_FAMILY: readonly (IpFamily | undefined)[] = [undefined];

/** What a side of one subject reads of the other address, as one function. */
type Signer = (other: Address, family: IpFamily | undefined) => string | number;

interface SubjectSide {
  readonly sign: Signer;
  readonly memo: Map<string | number, PortSet>;
}

interface EndpointRecord {
  readonly families: readonly IpFamily[];
  egress?: SubjectSide;
  ingress?: SubjectSide;
}

export class SidedEvaluator {
  readonly index: ClusterIndex;
  /** Per endpoint, everything computed about it once: its families and its two sides. */
  private readonly records = new Map<Endpoint, EndpointRecord>();

  private readonly ceilings: PortCeilings;

  constructor(
    readonly cluster: Cluster,
    readonly semantics: Semantics = 'v1',
  ) {
    this.index = indexCluster(cluster);
    this.ceilings = new PortCeilings(this.index, semantics);
  }

  /**
   * False when the pair is sure to allow nothing: two endpoints whose egress and ingress bounds
   * (port-ceiling.ts: the ports their isolating rules name) share no port. Costs no evaluation.
   */
  mayAllow(src: Address, dst: Address): boolean {
    if (src.kind !== 'endpoint' || dst.kind !== 'endpoint') return true;
    // A pod to itself is allowed whatever its policies say.
    if (src.endpoint === dst.endpoint) return true;
    const out = isOwnNode(this.index, src.endpoint, dst)
      ? ALL_PORTS
      : this.ceilings.of(src.endpoint, 'egress');
    const into = isOwnNode(this.index, dst.endpoint, src)
      ? ALL_PORTS
      : this.ceilings.of(dst.endpoint, 'ingress');
    return portSetsMeet(out, into);
  }

  /**
   * The ports one side of `endpoint` may allow towards any endpoint not on the host network of its
   * node (port-ceiling.ts); what `mayAllow` meets.
   */
  bound(endpoint: Endpoint, side: Side): PortSet {
    // Asked once of every endpoint (pair-bounds.ts): not kept, unlike mayAllow's.
    return this.ceilings.once(endpoint, side);
  }

  /** Allowed ports from `src` to `dst`: every common family's egress ∩ ingress (as `allowedPorts`). */
  ports(src: Address, dst: Address): PortSet {
    const families = this.families(src, dst);
    if (families.length === 0 || !this.mayAllow(src, dst)) return EMPTY_PORTS;
    let result = ALL_PORTS;
    for (const family of families) {
      result = intersectPorts(result, this.side(src, dst, 'egress', family));
      // Nothing left: the other side need not be asked (most pairs of a large cluster end here).
      if (isNoPorts(result)) return EMPTY_PORTS;
      result = intersectPorts(result, this.side(src, dst, 'ingress', family));
      if (isNoPorts(result)) return EMPTY_PORTS;
    }
    return result;
  }

  /** One side's ports over every common family (`ALL_PORTS` when the pair shares none: `ports` is empty then anyway). */
  sidePorts(src: Address, dst: Address, side: Side): PortSet {
    const families = this.families(src, dst);
    if (families.length === 1) return this.side(src, dst, side, families[0]);
    let result = ALL_PORTS;
    for (const family of families) result = intersectPorts(result, this.side(src, dst, side, family));
    return result;
  }

  /** `connectionFamilies(src, dst).families`, from each address's families computed once. */
  private families(src: Address, dst: Address): readonly (IpFamily | undefined)[] {
    const s = this.familiesOf(src);
    const d = this.familiesOf(dst);
    if (s.length === 0 && d.length === 0) return NO_FAMILY;
    if (s.length === 0) return d;
    if (d.length === 0 || s === d) return s;
    if (s.length === 1 && d.length === 1) return s[0] === d[0] ? s : NONE;
    const common = s.filter((f) => d.includes(f));
    return common.length === s.length ? s : common;
  }

  private familiesOf(address: Address): readonly IpFamily[] {
    if (address.kind === 'ip') return address.ip.family === 4 ? ONLY_V4 : ONLY_V6;
    return this.record(address.endpoint).families;
  }

  private record(endpoint: Endpoint): EndpointRecord {
    let found = this.records.get(endpoint);
    if (!found) {
      const set = new Set(endpoint.ips.map((ip) => ip.family));
      const families = set.size === 0 ? NONE : set.size === 2 ? BOTH : set.has(4) ? ONLY_V4 : ONLY_V6;
      this.records.set(endpoint, (found = { families }));
    }
    return found;
  }

  /** The signature of the other address for one side: equal signatures, equal side ports. */
  signature(src: Address, dst: Address, side: Side, family: IpFamily | undefined): string | number {
    const subject = side === 'egress' ? src : dst;
    const other = side === 'egress' ? dst : src;
    if (subject.kind !== 'endpoint') return '';
    return this.subjectSide(subject.endpoint, side).sign(other, family);
  }

  private side(src: Address, dst: Address, side: Side, family: IpFamily | undefined): PortSet {
    const subject = side === 'egress' ? src : dst;
    // Addresses outside the cluster have no policy: that side is open.
    if (subject.kind !== 'endpoint') return ALL_PORTS;
    const other = side === 'egress' ? dst : src;
    const state = this.subjectSide(subject.endpoint, side);
    const key = state.sign(other, family);
    let ports = state.memo.get(key);
    if (!ports) {
      ports = sidePorts(this.index, src, dst, side, family, { semantics: this.semantics });
      state.memo.set(key, ports);
    }
    return ports;
  }

  private subjectSide(subject: Endpoint, side: Side): SubjectSide {
    const entry = this.record(subject);
    let state = entry[side];
    if (!state) entry[side] = state = { sign: this.signer(subject, side), memo: new Map() };
    return state;
  }

  /** Builds the signature function of one subject's side from the policies that select it. */
  private signer(subject: Endpoint, side: Side): Signer {
    const index = this.index;
    const semantics = this.semantics;
    // Peers give one bit each (packed 30 to a number); named ports give text.
    const bits: ((other: Address, family: IpFamily | undefined) => boolean)[] = [];
    const texts: ((other: Address) => string)[] = [];
    // Host-networked subjects are outside policy: nothing about the other address matters.
    if (subject.hostNetwork) return () => '';
    for (const policy of selectingPolicies(index, subject, side, semantics)) {
      for (const rule of side === 'ingress' ? policy.ingress : policy.egress) {
        if (!listMatchesAll(rule.peers, semantics))
          for (const peer of rule.peers ?? [])
            bits.push((other, family) => peerMatches(index, peer, policy.namespace, other, family));
        // Named ports resolve against the destination: the other address for egress only.
        if (side === 'egress' && !listMatchesAll(rule.ports, semantics))
          for (const port of rule.ports ?? [])
            if (typeof port.port === 'string') {
              const name = port.port;
              texts.push((other) => `${resolveNamedPort(other, name, port.protocol) ?? '-'}`);
            }
      }
    }
    for (const tier of tierPlan(index.cluster)) {
      for (const policy of selectingClusterPolicies(index, subject, side, tier.name)) {
        for (const rule of policy[side]) {
          if (rule.failClosed) continue;
          for (const peer of rule.peers)
            bits.push((other, family) => clusterPeerMatches(index, peer, subject, other, family));
          if (side === 'egress')
            for (const port of rule.ports ?? [])
              if (port.type === 'named') {
                const name = port.name;
                const protocol = port.protocol;
                texts.push((other) =>
                  other.kind === 'endpoint'
                    ? namedPortTargets(other.endpoint.ports, name, protocol)
                        .map((t) => `${t.protocol}${t.port}`)
                        .join('+')
                    : '-',
                );
              }
        }
      }
    }
    // Few peers and no named ports (the common case): the signature is one number, not a string.
    if (bits.length <= 30 && texts.length === 0)
      return (other, family) => {
        let word = 0;
        for (let i = 0; i < bits.length; i++)
          if ((bits[i] as (typeof bits)[number])(other, family)) word |= 1 << i;
        const flags =
          (family === undefined ? 0 : family === 4 ? 1 : 2) +
          (other.kind === 'endpoint' ? 4 : 0) +
          (isOwnNode(index, subject, other) ? 8 : 0);
        return word * 16 + flags;
      };
    return (other, family) => {
      // A host-network endpoint resolves no Calico or Cilium named port (they are its node's).
      let key = `${family ?? '-'}${other.kind === 'endpoint' ? (other.endpoint.hostNetwork ? 'h' : 'e') : 'i'}${isOwnNode(index, subject, other) ? 'n' : ''}`;
      let word = 0;
      for (let i = 0; i < bits.length; i++) {
        if ((bits[i] as (typeof bits)[number])(other, family)) word |= 1 << (i % 30);
        if (i % 30 === 29) {
          key += `:${word}`;
          word = 0;
        }
      }
      key += `:${word}`;
      for (const text of texts) key += `,${text(other)}`;
      return key;
    };
  }
}
