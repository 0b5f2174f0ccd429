/**
 * The matrix from the compiled tables — the configurator's per-pod rules over address groups,
 * the compilation every datapath gets — evaluated a whole row at a time. Over n equivalence
 * classes, each rule's peer (a group, a CIDR, anything) is a bit set of the classes it admits,
 * and one side of one class is its rules applied in order to the bit set of peers still
 * undecided: a few word operations per rule, not an evaluation per pair. The egress rows (by
 * source) and the ingress rows (by destination, then transposed) meet in one AND per word.
 *
 * The store is built from the class representatives only: a group's membership of a
 * representative does not depend on the other pods, and the named-port partitions that exist
 * among the representatives are all that the matrix's endpoints can reach.
 *
 * Exact against the reference evaluator (property-tested), with two boundaries kept by the
 * caller: v1 semantics only, and endpoints without addresses (workloads read from a repository)
 * are answered by the reference, as the compiled path does not compile them.
 */
import type { IpFamily } from '../net/ip.ts';
import type { Cluster, Endpoint, Protocol } from '../model/types.ts';
import type { NetRef, Rule, RuleTable } from '../model/rule.ts';
import { Configurator, type PodTables, type TieredTable } from '../configurator/index.ts';
import { ClusterState } from '../state/index.ts';
import { resolveNamedPort } from '../semantics/index.ts';
import { transpose, wordsFor } from './bit-rows.ts';
import { NetBits } from './net-bits.ts';

export interface CompiledMatrixOptions {
  /** Traffic between a pod and its own node is allowed by NetworkPolicy (default true). */
  readonly allowNodeLocal?: boolean;
}

const FAMILIES: readonly IpFamily[] = [4, 6];

/** The tables deciding one class's sides; undefined: not subject to policy (host network). */
type Subject = PodTables | undefined;

export class CompiledMatrix {
  readonly n: number;
  private readonly words: number;
  private readonly nets: NetBits;
  private readonly subjects: Subject[];
  private readonly allowNodeLocal: boolean;
  /** Side rows already computed, by what they depend on (equal tables give equal rows). */
  private readonly sides = new Map<string, Uint32Array>();
  private readonly objectIds = new WeakMap<object, number>();
  private nextObjectId = 1;

  constructor(
    cluster: Cluster,
    private readonly representatives: readonly Endpoint[],
    options: CompiledMatrixOptions = {},
  ) {
    this.n = representatives.length;
    this.words = wordsFor(this.n);
    this.allowNodeLocal = options.allowNodeLocal ?? true;
    const state = new ClusterState();
    state.resync({ ...cluster, endpoints: representatives });
    this.nets = new NetBits(state, representatives);
    const configurator = new Configurator(state, { allowNodeLocal: this.allowNodeLocal });
    this.subjects = representatives.map((rep) =>
      rep.hostNetwork || rep.ips.length === 0 ? undefined : configurator.compile(rep),
    );
  }

  /** Whether the class has an address (else the reference answers its pairs). */
  hasAddress(cls: number): boolean {
    return (this.representatives[cls] as Endpoint).ips.length > 0;
  }

  /**
   * Bit (a, b) of the n × n result: class a may open a connection to class b on this port (a
   * name resolves per destination). Pairs where either class has no address are left 0. With
   * `only`, over that address family alone (pairs not sharing it are 0): dual-stack answers.
   */
  portBits(protocol: Protocol, port: number | string, only?: IpFamily): Uint32Array {
    const { n, words } = this;
    const dstPort = this.representatives.map((rep) =>
      typeof port === 'number' ? port : resolveNamedPort({ kind: 'endpoint', endpoint: rep }, port, protocol),
    );
    const ports = [...new Set(dstPort.filter((p): p is number => p !== undefined))];
    const answer = new Uint32Array(n * words);
    const perFamily: { family: IpFamily; both: Uint32Array }[] = [];
    for (const family of only === undefined ? FAMILIES : [only]) {
      const has = this.nets.hasFamily(family);
      if (has.every((w) => w === 0)) continue;
      // Egress rows by source: per distinct destination port, the destinations resolving to it.
      const egress = new Uint32Array(n * words);
      const byPort = ports.map((p) => {
        const mask = new Uint32Array(words);
        dstPort.forEach((q, b) => {
          if (q === p) mask[b >>> 5] = (mask[b >>> 5] as number) | (1 << (b & 31));
        });
        for (let w = 0; w < words; w++) mask[w] = (mask[w] as number) & (has[w] as number);
        return { port: p, mask };
      });
      const ingress = new Uint32Array(n * words);
      for (let c = 0; c < n; c++) {
        if (!bit(has, c)) continue;
        for (const { port: p, mask } of byPort) {
          const row = this.side(c, 'egress', family, protocol, p, mask);
          for (let w = 0; w < words; w++)
            egress[c * words + w] = (egress[c * words + w] as number) | (row[w] as number);
        }
        const own = dstPort[c];
        if (own === undefined) continue;
        ingress.set(this.side(c, 'ingress', family, protocol, own, has), c * words);
      }
      // Ingress row b lists sources; transposed, row a lists the destinations admitting a.
      const admitted = transpose(ingress, n);
      for (let i = 0; i < egress.length; i++) egress[i] = (egress[i] as number) & (admitted[i] as number);
      perFamily.push({ family, both: egress });
    }
    // A pair is allowed when every address family both ends have allows it.
    for (let a = 0; a < n; a++) {
      const families = perFamily.filter(({ family }) => this.nets.classHasFamily(a, family));
      if (families.length === 0) continue;
      for (let w = 0; w < words; w++) {
        let all = 0xffffffff;
        let some = 0;
        for (const { family, both } of families) {
          const has = this.nets.hasFamily(family)[w] as number;
          all &= (both[a * words + w] as number) | ~has;
          some |= has;
        }
        answer[a * words + w] = all & some;
      }
    }
    return answer;
  }

  /**
   * The port ranges within which every rule of every class's tables decides alike: a port set
   * is the union of the atoms allowed, so the matrix needs one pass per atom, not per port.
   */
  portAtoms(): { protocol: Protocol; from: number; to: number }[] {
    const cuts: Record<Protocol, Set<number>> = { TCP: new Set([1]), UDP: new Set([1]), SCTP: new Set([1]) };
    const add = (rule: Rule): void => {
      const from = rule.dstPorts?.[0] ?? 1;
      const to = rule.dstPorts?.[1] ?? 65535;
      for (const protocol of ['TCP', 'UDP', 'SCTP'] as const)
        if (rule.protocol === 'ANY' || rule.protocol === protocol) {
          cuts[protocol].add(from);
          if (to < 65535) cuts[protocol].add(to + 1);
        }
    };
    for (const tables of this.subjects) {
      if (!tables) continue;
      for (const table of [tables.ingress, tables.egress]) for (const rule of table?.rules ?? []) add(rule);
      for (const tiers of [tables.ingressTiers, tables.egressTiers])
        for (const rule of [...(tiers?.admin ?? []), ...(tiers?.baseline ?? [])]) add(rule);
    }
    const atoms: { protocol: Protocol; from: number; to: number }[] = [];
    for (const protocol of ['TCP', 'UDP', 'SCTP'] as const) {
      const sorted = [...cuts[protocol]].sort((x, y) => x - y);
      sorted.forEach((from, i) => atoms.push({ protocol, from, to: (sorted[i + 1] ?? 65536) - 1 }));
    }
    return atoms;
  }

  /**
   * One side of one class: the peers (of `peers`, each with an address of `family`) whose
   * packets on this port its tables let through — the Admin tier's rules in order, then the
   * NetworkPolicy table when the class is isolated (its own node always allowed), else the
   * Baseline tier's rules, else allowed.
   */
  private side(
    cls: number,
    direction: 'ingress' | 'egress',
    family: IpFamily,
    protocol: Protocol,
    port: number,
    peers: Uint32Array,
  ): Uint32Array {
    const tables = this.subjects[cls];
    if (!tables) return peers;
    const table = tables[direction];
    const tiers = direction === 'ingress' ? tables.ingressTiers : tables.egressTiers;
    if (!table && !tiers) return peers;
    const node = table && this.allowNodeLocal ? (this.representatives[cls]?.node ?? '') : '';
    const key = `${this.idOf(table)}|${this.idOf(tiers)}|${direction}|${family}|${protocol}|${port}|${this.idOf(peers)}|${node}`;
    const known = this.sides.get(key);
    if (known) return known;
    const row = this.evaluateSide(table, tiers, direction, family, protocol, port, peers, node);
    this.sides.set(key, row);
    return row;
  }

  private evaluateSide(
    table: RuleTable | undefined,
    tiers: TieredTable | undefined,
    direction: 'ingress' | 'egress',
    family: IpFamily,
    protocol: Protocol,
    port: number,
    peers: Uint32Array,
    node: string,
  ): Uint32Array {
    const allowed = new Uint32Array(this.words);
    const undecided = peers.slice();
    const passed = new Uint32Array(this.words);
    const peerOf = (rule: Rule): NetRef => (direction === 'egress' ? rule.dst : rule.src);
    if (tiers)
      this.tiers(tiers.admin, tiers.adminBreaks, peerOf, family, protocol, port, undecided, allowed, passed);
    for (let w = 0; w < this.words; w++) undecided[w] = (undecided[w] as number) | (passed[w] as number);
    if (table) {
      if (node !== '') {
        const local = this.nets.hostNetworkOn(node, family);
        for (let w = 0; w < this.words; w++) {
          allowed[w] = (allowed[w] as number) | ((undecided[w] as number) & (local[w] as number));
          undecided[w] = (undecided[w] as number) & ~(local[w] as number);
        }
      }
      this.firstMatch(table.rules, peerOf, family, protocol, port, undecided, allowed, undefined);
      return allowed;
    }
    // Not isolated: the Baseline tier, where passing (like matching nothing) ends in allowed.
    passed.fill(0);
    if (tiers)
      this.tiers(
        tiers.baseline,
        tiers.baselineBreaks,
        peerOf,
        family,
        protocol,
        port,
        undecided,
        allowed,
        passed,
      );
    for (let w = 0; w < this.words; w++)
      allowed[w] = (allowed[w] as number) | (undecided[w] as number) | (passed[w] as number);
    return allowed;
  }

  /**
   * A list of tiers (`breaks`: where each after the first starts): each tier's first match over
   * the peers still undecided, a pass going on to the next tier — out of the list (into
   * `passed`) from the last.
   */
  private tiers(
    rules: readonly Rule[],
    breaks: readonly number[] | undefined,
    peerOf: (rule: Rule) => NetRef,
    family: IpFamily,
    protocol: Protocol,
    port: number,
    undecided: Uint32Array,
    allowed: Uint32Array,
    passed: Uint32Array,
  ): void {
    if (!breaks) return this.firstMatch(rules, peerOf, family, protocol, port, undecided, allowed, passed);
    const starts = [0, ...breaks, rules.length];
    for (let t = 0; t + 1 < starts.length; t++) {
      const tier = rules.slice(starts[t], starts[t + 1]);
      const last = t + 2 === starts.length;
      const into = last ? passed : new Uint32Array(this.words);
      this.firstMatch(tier, peerOf, family, protocol, port, undecided, allowed, into);
      if (!last)
        for (let w = 0; w < this.words; w++) undecided[w] = (undecided[w] as number) | (into[w] as number);
    }
  }

  /**
   * First match over a rule list for the peers still `undecided`: a permit moves the peers its
   * net admits to `allowed`, a deny drops them, a pass moves them to `passed` (when given).
   */
  private firstMatch(
    rules: readonly Rule[],
    peerOf: (rule: Rule) => NetRef,
    family: IpFamily,
    protocol: Protocol,
    port: number,
    undecided: Uint32Array,
    allowed: Uint32Array,
    passed: Uint32Array | undefined,
  ): void {
    const words = this.words;
    for (const rule of rules) {
      if (rule.protocol !== 'ANY' && rule.protocol !== protocol) continue;
      if (rule.dstPorts && (port < rule.dstPorts[0] || port > rule.dstPorts[1])) continue;
      const net = this.nets.of(peerOf(rule), family);
      const into = rule.action === 'permit' ? allowed : rule.action === 'pass' ? passed : undefined;
      let left = 0;
      for (let w = 0; w < words; w++) {
        const hit = (undecided[w] as number) & (net[w] as number);
        if (hit === 0) {
          left |= undecided[w] as number;
          continue;
        }
        if (into) into[w] = (into[w] as number) | hit;
        undecided[w] = (undecided[w] as number) & ~hit;
        left |= undecided[w] as number;
      }
      if (left === 0) return;
    }
  }

  /** A small number per object, for memo keys (tables and masks are shared objects). */
  private idOf(object: object | undefined): number {
    if (!object) return 0;
    let id = this.objectIds.get(object);
    if (id === undefined) this.objectIds.set(object, (id = this.nextObjectId++));
    return id;
  }
}

function bit(row: Uint32Array, index: number): boolean {
  return ((row[index >>> 5] as number) & (1 << (index & 31))) !== 0;
}
