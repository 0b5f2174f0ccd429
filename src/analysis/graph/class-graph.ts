/**
 * The connectivity graph for pictures (`matrix -o dot|svg|html`, serve's graph), from one matrix
 * of classes: the cluster's endpoints together with one stand-in per range of addresses outside
 * the cluster (an address no endpoint or node has, host-networked and in no namespace, so that
 * only ipBlocks and networks match it, as for any outside address). Edges come from what each
 * class reaches — never from every pair of rows — so the graph costs what is allowed.
 *
 * A workload's edge to another says what every pod pair of the two may use (as a matrix cell
 * does); a namespace's, what some workload of it may use towards some workload of the other;
 * an address range's, what every pod of the workload may use towards it. Ranges reached alike
 * are one node. The caller aggregates the result to a readable size (aggregate.ts).
 */
import { formatInterval, normalizeIntervals, type IpInterval } from '../../net/intervals.ts';
import type { Cluster, Endpoint, Semantics } from '../../model/types.ts';
import {
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  unionPorts,
  type PortSet,
} from '../../semantics/index.ts';
import { addressRanges } from '../address-ranges.ts';
import { portListText } from '../format/ports-text.ts';
import { computeMatrix } from '../matrix.ts';
import type { PortQuery } from '../types.ts';
import { groupEndpoints } from '../workload-view.ts';
import type { ConnectivityGraph, GraphNode } from './graph.ts';

export interface ClassGraphOptions {
  readonly endpoints: readonly Endpoint[];
  readonly queries: readonly PortQuery[];
  readonly semantics?: Semantics;
  /** Nodes per workload, or per namespace. */
  readonly groupBy: 'workload' | 'namespace';
  /** Draw the ranges of addresses outside the cluster (default true). */
  readonly addresses?: boolean;
  readonly engine?: 'auto' | 'reference' | 'compiled';
  readonly onProgress?: (done: number, total: number) => void;
}

export interface PortEdge {
  readonly from: string;
  readonly to: string;
  readonly ports: PortSet;
}

/** A node with its edges' ports, before labels are made (aggregate.ts merges these). */
export interface PortGraph {
  readonly title: string;
  readonly nodes: GraphNode[];
  /** Edges in drawing order, one per ordered pair of nodes. */
  readonly edges: readonly PortEdge[];
  /** Pods (or endpoints) per node, for labels of merged nodes. */
  readonly sizes: Map<string, number>;
}

const RANGE_NAMESPACE = '';

/** More ranges of outside addresses than this are not drawn (the title says so). */
const MAX_DRAWN_RANGES = 64;

export function classGraph(cluster: Cluster, options: ClassGraphOptions): PortGraph {
  const { endpoints, groupBy } = options;
  const all = options.addresses === false || endpoints.length === 0 ? [] : addressRanges([cluster]);
  // Past a few dozen ranges (an ipBlock per namespace, each with its own except), a range is a
  // node no one can read and their arrows are most of the work: they are left out, and said so.
  const ranges = all.length > MAX_DRAWN_RANGES ? [] : all;
  const standIns: Endpoint[] = ranges.map((range, i) => ({
    id: `range:${i}`,
    kind: 'Pod',
    namespace: RANGE_NAMESPACE,
    name: `range-${i}`,
    labels: {},
    ips: [range.representative],
    ports: [],
    hostNetwork: true,
  }));
  const matrix = computeMatrix(cluster, {
    endpoints: [...endpoints, ...standIns],
    queries: options.queries,
    ...(options.semantics ? { semantics: options.semantics } : {}),
    engine: options.engine ?? 'auto',
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const classes = matrix.classes;
  if (!classes) throw new Error('the matrix has no class answers');
  const classOf = classes.classOf;

  // Rows (workloads) and the classes of their pods; each range's class.
  const rows = groupEndpoints(endpoints, 'workload');
  const index = new Map<Endpoint, number>();
  endpoints.forEach((e, i) => index.set(e, i));
  const rowClasses = rows.map((row) => [
    ...new Set(row.members.map((e) => classOf[index.get(e) as number] as number)),
  ]);
  const rowsOfClass = new Map<number, number[]>();
  rowClasses.forEach((list, r) => {
    for (const c of list) rowsOfClass.set(c, [...(rowsOfClass.get(c) ?? []), r]);
  });
  const rangesOfClass = new Map<number, number[]>();
  ranges.forEach((_, i) => {
    const c = classOf[endpoints.length + i] as number;
    rangesOfClass.set(c, [...(rangesOfClass.get(c) ?? []), i]);
  });
  // What each class of a workload reaches: workloads (with every class pair seen) and ranges.
  const reachedByClass = new Map<number, Map<number, PortSet>>();
  const reachedOf = (a: number): Map<number, PortSet> => {
    let found = reachedByClass.get(a);
    if (!found) {
      found = new Map();
      const map = found;
      classes.forEachReached(a, (b, ports) => map.set(b, ports));
      reachedByClass.set(a, found);
    }
    return found;
  };

  const nodeOfRow = (r: number): string => {
    const row = rows[r] as (typeof rows)[number];
    return groupBy === 'namespace' ? `ns:${row.namespace}` : `ep:${row.label}`;
  };
  const nodes = new Map<string, GraphNode>();
  const sizes = new Map<string, number>();
  rows.forEach((row, r) => {
    const id = nodeOfRow(r);
    if (!nodes.has(id))
      nodes.set(
        id,
        groupBy === 'namespace'
          ? { id, label: row.namespace, kind: 'namespace' }
          : { id, label: row.label, kind: 'endpoint', namespace: row.namespace },
      );
    sizes.set(id, (sizes.get(id) ?? 0) + row.members.length);
  });
  // Edges in the order a walk over every pair of rows, then over the ranges, meets them first
  // (the order the drawing's text has always had).
  const edges = new Map<string, { from: string; to: string; ports: PortSet; rank: number[] }>();
  const add = (from: string, to: string, ports: PortSet, rank: number[]): void => {
    if (isNoPorts(ports)) return;
    const key = `${from}\u0000${to}`;
    const edge = edges.get(key);
    if (!edge) edges.set(key, { from, to, ports, rank });
    else {
      edge.ports = unionPorts(edge.ports, ports);
      if (compareRanks(rank, edge.rank) < 0) edge.rank = rank;
    }
  };

  // Workload → workload: every class pair of the two must be reached, the ports all share.
  rows.forEach((_, r) => {
    const own = rowClasses[r] as number[];
    const seen = new Map<number, { pairs: number; ports: PortSet }>();
    for (const a of own)
      for (const [b, ports] of reachedOf(a))
        for (const target of rowsOfClass.get(b) ?? []) {
          const entry = seen.get(target);
          if (entry) {
            entry.pairs++;
            entry.ports = intersectPorts(entry.ports, ports);
          } else seen.set(target, { pairs: 1, ports });
        }
    for (const [target, { pairs, ports }] of seen) {
      if (pairs !== own.length * (rowClasses[target] as number[]).length) continue;
      // A workload reaching itself is no edge worth drawing; a namespace's own traffic is.
      if (target === r && groupBy === 'workload') continue;
      add(nodeOfRow(r), nodeOfRow(target), ports, [0, r, target]);
    }
  });

  // Workloads ↔ ranges: what every class of the workload may do, each way.
  const rangeOut = ranges.map(() => new Map<string, PortSet>());
  const rangeIn = ranges.map(() => new Map<string, PortSet>());
  if (ranges.length > 0) {
    // Each way, from what is reached (never every workload against every range): an edge where
    // every class of the workload is reached, with the ports all of them share.
    const meet = (
      seen: Map<number, { pairs: number; ports: PortSet }>,
      key: number,
      ports: PortSet,
    ): void => {
      const entry = seen.get(key);
      if (entry) {
        entry.pairs++;
        entry.ports = intersectPorts(entry.ports, ports);
      } else seen.set(key, { pairs: 1, ports });
    };
    const addRange = (list: Map<string, PortSet>[], g: number, node: string, ports: PortSet): void => {
      for (const i of rangesOfClass.get(g) ?? []) {
        const map = list[i] as Map<string, PortSet>;
        map.set(node, unionPorts(map.get(node) ?? EMPTY_PORTS, ports));
      }
    };
    rows.forEach((_, r) => {
      const own = rowClasses[r] as number[];
      const seen = new Map<number, { pairs: number; ports: PortSet }>();
      for (const a of own)
        for (const [g, ports] of reachedOf(a)) if (rangesOfClass.has(g)) meet(seen, g, ports);
      for (const [g, { pairs, ports }] of seen)
        if (pairs === own.length) addRange(rangeOut, g, nodeOfRow(r), ports);
    });
    for (const g of rangesOfClass.keys()) {
      const seen = new Map<number, { pairs: number; ports: PortSet }>();
      for (const [a, ports] of reachedOf(g)) for (const r of rowsOfClass.get(a) ?? []) meet(seen, r, ports);
      for (const [r, { pairs, ports }] of seen)
        if (pairs === (rowClasses[r] as number[]).length) addRange(rangeIn, g, nodeOfRow(r), ports);
    }
    // Ranges reached alike are one node.
    const alike = new Map<
      string,
      { intervals: IpInterval[]; out: Map<string, PortSet>; into: Map<string, PortSet> }
    >();
    ranges.forEach((range, i) => {
      const out = rangeOut[i] as Map<string, PortSet>;
      const into = rangeIn[i] as Map<string, PortSet>;
      if (out.size === 0 && into.size === 0) return;
      const key =
        [...out].map(([k, v]) => `${k}>${formatPortSet(v)}`).join(';') +
        '|' +
        [...into].map(([k, v]) => `${k}<${formatPortSet(v)}`).join(';');
      const found = alike.get(key);
      if (found) found.intervals.push(range.interval);
      else alike.set(key, { intervals: [range.interval], out, into });
    });
    let i = 0;
    const order = new Map([...nodes.keys()].map((id, k) => [id, k]));
    for (const group of alike.values()) {
      const g = i++;
      const id = `addr:${g}`;
      nodes.set(id, {
        id,
        label: normalizeIntervals(group.intervals).map(formatInterval).join('\n'),
        kind: 'addresses',
      });
      sizes.set(id, group.intervals.length);
      for (const [node, ports] of group.out) add(node, id, ports, [1, g, 0, order.get(node) ?? 0]);
      for (const [node, ports] of group.into) add(id, node, ports, [1, g, 1, order.get(node) ?? 0]);
    }
  }
  const n = rows.length;
  const sorted = [...edges.values()]
    .sort((a, b) => compareRanks(a.rank, b.rank))
    .map(({ from, to, ports }) => ({ from, to, ports }));
  const left =
    all.length > ranges.length
      ? `; ${all.length.toLocaleString('en-US')} ranges of addresses outside the cluster not drawn`
      : '';
  return {
    title: `${n} ${groupBy === 'namespace' ? 'endpoints by namespace' : 'endpoints'}${options.queries.length ? ` on ${options.queries.map((q) => `${q.protocol}/${q.port}`).join(', ')}` : ''}${left}`,
    nodes: [...nodes.values()],
    edges: sorted,
    sizes,
  };
}

function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

/** The graph with its edges labelled (the form the formats and the page take), in edge order. */
export function labelled(graph: PortGraph): ConnectivityGraph {
  return {
    title: graph.title,
    nodes: graph.nodes,
    edges: graph.edges.map((e) => ({ from: e.from, to: e.to, label: portListText(e.ports) })),
  };
}
