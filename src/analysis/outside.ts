/**
 * A matrix's connections with the address space outside the cluster, as the matrix formats list
 * them (the graph formats and diff show the same ranges): the ranges policies can tell apart
 * (address-ranges.ts), those that every row treats alike merged into one, and per row what it
 * may send there and receive from there — what every pod of the row may, as the row's cells
 * say, and what some pod of it may (a row of a namespace's pods, where they differ). Port-set
 * matrices get the ports; per-port matrices the answer per query.
 */
import type { Cluster, Endpoint, Semantics } from '../model/types.ts';
import {
  familyInterval,
  formatInterval,
  normalizeIntervals,
  subtractIntervals,
  type IpInterval,
} from '../net/intervals.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  portSetHas,
  resolveNamedPort,
  unionPorts,
  type PortSet,
} from '../semantics/index.ts';
import { addressRanges } from './address-ranges.ts';
import { endpointClasses } from './equivalence.ts';
import { SidedEvaluator } from './sided.ts';
import type { Matrix } from './types.ts';

/** Ranges every row treats alike, and what each row may send there and receive from there. */
export interface OutsideClass {
  /** The ranges as CIDRs (`0.0.0.0/5, 8.0.0.0/7, …`), or a range's first and last address. */
  readonly label: string;
  readonly intervals: readonly IpInterval[];
  /** Per row: the ports the row's pods may open to these addresses. */
  readonly out: readonly PortSet[];
  /** Per row: the ports these addresses may open to the row's pods. */
  readonly into: readonly PortSet[];
  /**
   * Per row: the ports some pod of the row may open to these addresses (`out` and more), when
   * asked for (`somePods`); else `out` itself.
   */
  readonly outSome: readonly PortSet[];
  /** Per row: the ports these addresses may open to some pod of the row (`into` and more), likewise. */
  readonly intoSome: readonly PortSet[];
}

/** Side evaluations `outsideClasses` makes at most unless told to (`budget`): a few seconds' work. */
export const OUTSIDE_BUDGET = 2_000_000;

/**
 * The address classes and each row's connections with them; `undefined` when that would take
 * more than `budget` side evaluations (two per equivalence class of the rows' pods and range).
 * `somePods`: also what only some pods of a row may (the text formats' `~`) — ranges are then
 * told apart by it too, so the formats that say only what every pod may (JSON, CSV, Markdown)
 * leave it out and keep their lines.
 */
export function outsideClasses(
  matrix: Matrix,
  cluster: Cluster,
  semantics: Semantics = 'v1',
  budget = Number.POSITIVE_INFINITY,
  somePods = false,
): OutsideClass[] | undefined {
  const n = matrix.rows.length;
  if (n === 0) return [];
  const sided = new SidedEvaluator(cluster, semantics);
  // Pods no policy can tell apart answer alike: one evaluation per equivalence class.
  const rows = Array.from({ length: n }, (_, r) => rowMembers(matrix, r));
  const members = rows.flat();
  const { classOf, representatives } = endpointClasses(cluster, members);
  // Only the families the rows' pods have: a range of another family can reach none of them. A
  // pod without an address (manifests from a repository) may have any.
  const families = new Set(members.flatMap((e) => e.ips.map((ip) => ip.family)));
  const anyFamily = members.some((e) => e.ips.length === 0);
  const ranges = addressRanges([cluster]).filter((r) => anyFamily || families.has(r.interval.family));
  if (2 * representatives.length * ranges.length > budget) return undefined;
  const rowClasses: number[][] = [];
  let m = 0;
  for (const row of rows) {
    const own = new Set<number>();
    for (let i = 0; i < row.length; i++, m++) own.add(classOf[m] as number);
    rowClasses.push([...own]);
  }
  type Found = Omit<OutsideClass, 'label' | 'intervals'> & { intervals: IpInterval[] };
  const classes = new Map<string, Found>();
  for (const range of ranges) {
    const ip = { kind: 'ip' as const, ip: range.representative };
    const egress = representatives.map((e) => sided.ports({ kind: 'endpoint', endpoint: e }, ip));
    const ingress = representatives.map((e) => sided.ports(ip, { kind: 'endpoint', endpoint: e }));
    // What every pod of the row may do, as the row's cells say; and what some pod of it may.
    const every = (perClass: readonly PortSet[], own: readonly number[]): PortSet =>
      own.reduce((ports, c) => intersectPorts(ports, perClass[c] as PortSet), ALL_PORTS);
    const some = (perClass: readonly PortSet[], own: readonly number[]): PortSet =>
      own.length === 1
        ? (perClass[own[0] as number] as PortSet)
        : own.reduce((ports, c) => unionPorts(ports, perClass[c] as PortSet), EMPTY_PORTS);
    const out = rowClasses.map((own) => every(egress, own));
    const into = rowClasses.map((own) => every(ingress, own));
    const outSome = somePods ? rowClasses.map((own) => some(egress, own)) : out;
    const intoSome = somePods ? rowClasses.map((own) => some(ingress, own)) : into;
    const key = (somePods ? [...out, ...into, ...outSome, ...intoSome] : [...out, ...into])
      .map(formatPortSet)
      .join('|');
    const known = classes.get(key);
    if (known) known.intervals.push(range.interval);
    else classes.set(key, { intervals: [range.interval], out, into, outSome, intoSome });
  }
  return [...classes.values()].map(({ intervals, ...ports }) => {
    const merged = normalizeIntervals(intervals);
    return { label: rangesLabel(merged), intervals: merged, ...ports };
  });
}

/**
 * Ranges as people read them, per family: `203.0.113.0/25`, or what the family's whole space
 * leaves out when that is shorter (`0.0.0.0/0 except 203.0.113.0/25`).
 */
function rangesLabel(intervals: readonly IpInterval[]): string {
  const parts: string[] = [];
  for (const family of [4, 6] as const) {
    const own = intervals.filter((i) => i.family === family);
    if (own.length === 0) continue;
    const listed = own.map(formatInterval).join(', ');
    const whole = familyInterval(family);
    const missing = subtractIntervals([whole], own);
    const all = formatInterval(whole);
    const except = missing.length === 0 ? all : `${all} except ${missing.map(formatInterval).join(', ')}`;
    parts.push(except.length < listed.length ? except : listed);
  }
  return parts.join('; ');
}

/** Whether a query column's port is allowed in a port set (a name resolves on the row's pod, or nowhere outside). */
export function outsideAllows(matrix: Matrix, ports: PortSet, q: number, row: number | undefined): boolean {
  const query = matrix.queries[q];
  if (!query || isNoPorts(ports)) return false;
  const port =
    typeof query.port === 'number'
      ? query.port
      : row === undefined
        ? undefined
        : resolveNamedPort(
            { kind: 'endpoint', endpoint: matrix.endpoints[row] as Endpoint },
            query.port,
            query.protocol,
          );
  return port !== undefined && portSetHas(ports, query.protocol, port);
}

/** The pods a matrix row stands for (a workload view's rows carry them; otherwise the row's endpoint). */
export function rowMembers(matrix: Matrix, row: number): readonly Endpoint[] {
  const members = (matrix.rows[row] as { members?: readonly Endpoint[] } | undefined)?.members;
  return members ?? [matrix.endpoints[row] as Endpoint];
}
