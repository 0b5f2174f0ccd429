/**
 * The matrix of classes from the compiled tables — the configurator's per-pod rules over address
 * groups, the compilation every datapath gets — as sparse answers: each class's two sides are
 * sets of peer classes per piece of the port space (side-answers.ts), and the pairs that may
 * connect are joined from them per address family (sparse-join.ts), so the cost follows what is
 * allowed, not the square of the classes. A pair is allowed on a port when every address family
 * both classes have allows it (the reference's dual-stack rule).
 *
 * The store is built from the class representatives only: a group's membership of a
 * representative does not depend on the other pods, and the named-port partitions that exist
 * among the representatives are all that the matrix's endpoints can reach.
 *
 * Exact against the reference evaluator (property-tested), with two boundaries kept by the
 * caller: v1 semantics only, and classes without addresses (workloads read from a repository)
 * are answered by the reference, as the compiled path does not compile them.
 */
import type { IpFamily } from '../../net/ip.ts';
import { PROTOCOLS, type Cluster, type Endpoint, type Protocol } from '../../model/types.ts';
import {
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  portSetOf,
  unionPorts,
  type PortSet,
} from '../../model/port-set.ts';
import { Configurator, type PodTables } from '../../configurator/index.ts';
import { ClusterState } from '../../state/index.ts';
import { addressOrder, ClassNets } from './class-nets.ts';
import { openAnswer, sideAnswer, type SideAnswer } from './side-answers.ts';
import { joinFamily, type Atom, type FamilyJoin } from './sparse-join.ts';

interface CompiledClassesOptions {
  /** Traffic between a pod and its own node is allowed by NetworkPolicy (default true). */
  readonly allowNodeLocal?: boolean;
  /** Only these ports matter (the queried ones): atoms outside them are not computed. */
  readonly portsOfInterest?: PortSet;
  /** Called with (done, total) atoms of all families together. */
  readonly onProgress?: (done: number, total: number) => void;
}

const FAMILIES: readonly IpFamily[] = [4, 6];

/** One family's join with its answers turned into port sets. */
interface FamilyAnswers {
  readonly join: FamilyJoin;
  /** Pattern → port set, computed when first asked. */
  readonly portSets: Map<number, PortSet>;
  /** Explicit pairs by source: keys sorted, and their patterns. */
  readonly keys: Float64Array;
  readonly keyPatterns: Int32Array;
  /** Classes by the pattern of atoms their ingress is open on. */
  readonly byOpenIngress: Map<number, number[]>;
}

export class CompiledClasses {
  readonly n: number;
  private readonly families: Partial<Record<IpFamily, FamilyAnswers>> = {};
  private readonly nets: ClassNets;
  /** The ports asked about, when not all (CompiledClassesOptions.portsOfInterest). */
  private readonly only: PortSet | undefined;
  /** Interned port sets, so equal answers are one object. */
  private readonly interned = new Map<string, PortSet>();
  private readonly combined = new Map<string, PortSet>();
  /** Membership checks the joins made, for the statistics. */
  readonly checks: number;

  constructor(
    cluster: Cluster,
    private readonly representatives: readonly Endpoint[],
    options: CompiledClassesOptions = {},
  ) {
    this.n = representatives.length;
    this.only = options.portsOfInterest;
    const allowNodeLocal = options.allowNodeLocal ?? true;
    const state = new ClusterState();
    state.resync({ ...cluster, endpoints: representatives });
    const { position, classAt } = addressOrder(representatives);
    this.nets = new ClassNets(state, representatives, position);
    const configurator = new Configurator(state, { allowNodeLocal });
    // Progress: the tables (a step per class), the sides (one per class and family), then the
    // joins (one per atom) — the atoms' count is known once the sides are.
    const families = FAMILIES.filter((f) => this.nets.hasFamily(f).length > 0);
    const early = (1 + families.length) * this.n;
    const tables: (PodTables | undefined)[] = representatives.map((rep, cls) => {
      if (cls % 1000 === 999) options.onProgress?.(cls + 1, early + this.n);
      return rep.hostNetwork || rep.ips.length === 0 ? undefined : configurator.compile(rep);
    });
    const ids = new ObjectIds();
    const sides = families.map((family, i) =>
      this.sides(family, tables, classAt, allowNodeLocal, ids, (done) =>
        options.onProgress?.((1 + i) * this.n + done, early + this.n),
      ),
    );
    const atoms = sides.map(({ egress, ingress }) =>
      atomsOf([...egress, ...ingress], options.portsOfInterest),
    );
    const total = early + atoms.reduce((sum, list) => sum + list.length, 0);
    let before = early;
    let checks = 0;
    families.forEach((family, i) => {
      const { egress, ingress } = sides[i] as {
        egress: (SideAnswer | undefined)[];
        ingress: (SideAnswer | undefined)[];
      };
      const offset = before;
      const join = joinFamily(
        egress,
        ingress,
        classAt,
        this.nets.hasFamily(family),
        atoms[i] as Atom[],
        (done) => options.onProgress?.(offset + done, total),
      );
      before += (atoms[i] as Atom[]).length;
      checks += join.checks;
      this.families[family] = this.answers(join);
    });
    this.checks = checks;
  }

  /** Whether the class has an address (else the reference answers its pairs). */
  hasAddress(cls: number): boolean {
    return (this.representatives[cls] as Endpoint).ips.length > 0;
  }

  /** Allowed ports from class a to class b: every family both have allows them (pairs with an addressless class: none). */
  ports(a: number, b: number): PortSet {
    let result: PortSet | undefined;
    for (const family of FAMILIES) {
      if (!this.nets.classHasFamily(a, family) || !this.nets.classHasFamily(b, family)) continue;
      const ports = this.familyPorts(family, a, b);
      result = result ? this.intern(intersectPorts(result, ports)) : ports;
    }
    return result ?? EMPTY_PORTS;
  }

  /** Allowed ports over one family alone; undefined when the two classes do not share it. */
  portsOverFamily(a: number, b: number, family: IpFamily): PortSet | undefined {
    if (!this.nets.classHasFamily(a, family) || !this.nets.classHasFamily(b, family)) return undefined;
    return this.familyPorts(family, a, b);
  }

  /**
   * Each class b that class a may reach on some port over some family — the pairs enumerated for
   * a, and the classes whose open ingress meets a's open egress — once each, in no set order.
   */
  forEachCandidate(a: number, visit: (b: number) => void): void {
    const candidates = new Set<number>();
    for (const family of FAMILIES) {
      const answers = this.families[family];
      if (!answers || !this.nets.classHasFamily(a, family)) continue;
      const { keys } = answers;
      for (
        let i = lowerBound(keys, a * this.n);
        i < keys.length && (keys[i] as number) < (a + 1) * this.n;
        i++
      )
        candidates.add((keys[i] as number) - a * this.n);
      const open = answers.join.openEgress[a] as number;
      if (open === 0) continue;
      const openPorts = this.patternPorts(answers, open);
      for (const [pattern, classes] of answers.byOpenIngress) {
        if (pattern === 0 || isNoPorts(intersectPorts(openPorts, this.patternPorts(answers, pattern))))
          continue;
        for (const b of classes) candidates.add(b);
      }
    }
    for (const b of candidates) visit(b);
  }

  private familyPorts(family: IpFamily, a: number, b: number): PortSet {
    const answers = this.families[family];
    if (!answers) return EMPTY_PORTS;
    const { join } = answers;
    const open = join.openEgress[a] as number;
    const admits = join.openIngress[b] as number;
    const key = a * this.n + b;
    const at = lowerBound(answers.keys, key);
    const explicit = answers.keys[at] === key ? (answers.keyPatterns[at] as number) : 0;
    const memo = `${family}|${open}|${admits}|${explicit}`;
    let ports = this.combined.get(memo);
    if (!ports) {
      const implicit =
        open === 0 || admits === 0
          ? EMPTY_PORTS
          : intersectPorts(this.patternPorts(answers, open), this.patternPorts(answers, admits));
      ports = this.intern(unionPorts(implicit, this.patternPorts(answers, explicit)));
      this.combined.set(memo, ports);
    }
    return ports;
  }

  private patternPorts(answers: FamilyAnswers, pattern: number): PortSet {
    let ports = answers.portSets.get(pattern);
    if (!ports) {
      const atoms = answers.join.patterns.atomsOf(pattern).map((i) => answers.join.atoms[i] as Atom);
      answers.portSets.set(pattern, (ports = this.intern(portSetOf(atoms))));
    }
    return ports;
  }

  private intern(ports: PortSet): PortSet {
    const text = formatPortSet(ports);
    let found = this.interned.get(text);
    if (!found) this.interned.set(text, (found = ports));
    return found;
  }

  private answers(join: FamilyJoin): FamilyAnswers {
    const keys = Float64Array.from(join.pairs.keys()).sort();
    const keyPatterns = Int32Array.from(keys, (k) => join.pairs.get(k) as number);
    join.pairs.clear();
    const byOpenIngress = new Map<number, number[]>();
    join.openIngress.forEach((pattern, cls) => {
      const list = byOpenIngress.get(pattern);
      if (list) list.push(cls);
      else byOpenIngress.set(pattern, [cls]);
    });
    return { join, portSets: new Map([[0, EMPTY_PORTS]]), keys, keyPatterns, byOpenIngress };
  }

  /** Every class's egress and ingress over one family, by position; equal tables share one answer. */
  private sides(
    family: IpFamily,
    tables: readonly (PodTables | undefined)[],
    classAt: Int32Array,
    allowNodeLocal: boolean,
    ids: ObjectIds,
    onProgress: (done: number) => void,
  ): { egress: (SideAnswer | undefined)[]; ingress: (SideAnswer | undefined)[] } {
    const open = openAnswer(this.nets.hasFamily(family));
    const memo = new Map<string, SideAnswer>();
    const side = (cls: number, direction: 'egress' | 'ingress'): SideAnswer | undefined => {
      if (!this.nets.classHasFamily(cls, family)) return undefined;
      const t = tables[cls];
      if (!t) return open;
      const table = t[direction];
      const tiers = direction === 'ingress' ? t.ingressTiers : t.egressTiers;
      if (!table && !tiers) return open;
      const node = table && allowNodeLocal ? (this.representatives[cls]?.node ?? '') : '';
      const key = `${ids.of(table)}|${ids.of(tiers)}|${direction}|${node}`;
      let answer = memo.get(key);
      if (!answer)
        memo.set(key, (answer = sideAnswer(this.nets, direction, family, table, tiers, node, this.only)));
      return answer;
    };
    const egress: (SideAnswer | undefined)[] = [];
    const ingress: (SideAnswer | undefined)[] = [];
    classAt.forEach((cls, pos) => {
      egress.push(side(cls, 'egress'));
      ingress.push(side(cls, 'ingress'));
      if (pos % 1000 === 999) onProgress(pos + 1);
    });
    return { egress, ingress };
  }
}

/** The atoms of one family: every piece bound of every side, per protocol (only those meeting `only`). */
function atomsOf(sides: readonly (SideAnswer | undefined)[], only: PortSet | undefined): Atom[] {
  const cuts: Record<Protocol, Set<number>> = { TCP: new Set([1]), UDP: new Set([1]), SCTP: new Set([1]) };
  const seen = new Set<SideAnswer>();
  for (const side of sides) {
    if (!side || seen.has(side)) continue;
    seen.add(side);
    for (const piece of side.pieces) cuts[piece.protocol].add(piece.from);
  }
  const atoms: Atom[] = [];
  for (const protocol of PROTOCOLS) {
    const sorted = [...cuts[protocol]].sort((x, y) => x - y);
    sorted.forEach((from, i) => {
      const atom = { protocol, from, to: (sorted[i + 1] ?? 65536) - 1 };
      if (!only || !isNoPorts(intersectPorts(only, portSetOf([atom])))) atoms.push(atom);
    });
  }
  return atoms;
}

function lowerBound(sorted: Float64Array, value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((sorted[mid] as number) < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A small number per object, for memo keys (tables are shared objects). */
class ObjectIds {
  private readonly ids = new WeakMap<object, number>();
  private next = 1;

  of(object: object | undefined): number {
    if (!object) return 0;
    let id = this.ids.get(object);
    if (id === undefined) this.ids.set(object, (id = this.next++));
    return id;
  }
}
