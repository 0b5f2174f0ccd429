/**
 * Connectivity as a graph for people to look at: nodes are endpoints (as the matrix aggregates
 * them: workloads, or pods) or namespaces (`groupBy: 'namespace'`), plus address ranges outside
 * the cluster; an edge says which ports one node may use to reach another (or, for a diff, how
 * that changed). Built from a matrix or a diff; laid out by Graphviz (format/graph-formats.ts).
 */
import { formatInterval, normalizeIntervals, type IpInterval } from '../../net/intervals.ts';
import type { Cluster, Endpoint, Semantics } from '../../model/types.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  portSetHas,
  portSetOf,
  resolveNamedPort,
  unionPorts,
  type PortSet,
} from '../../semantics/index.ts';
import { addressRanges } from '../address-ranges.ts';
import type { ConnectivityDiff, DiffPeer } from '../diff/types.ts';
import { SidedEvaluator } from '../sided.ts';
import type { Matrix } from '../types.ts';

export type GroupBy = 'workload' | 'namespace';

export interface GraphNode {
  readonly id: string;
  readonly label: string;
  readonly kind: 'endpoint' | 'namespace' | 'addresses';
  /** Endpoints are drawn inside a box of their namespace. */
  readonly namespace?: string;
  /** For a diff: the node exists only before (`removed`) or after (`added`). */
  readonly change?: 'added' | 'removed';
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly label: string;
  readonly change?: 'added' | 'removed' | 'changed';
}

export interface ConnectivityGraph {
  readonly title: string;
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
}

export interface MatrixGraphOptions {
  readonly groupBy?: GroupBy;
  /** Also draw the address ranges outside the cluster the endpoints may reach or be reached from (default true). */
  readonly addresses?: boolean;
  readonly semantics?: Semantics;
}

/** Allowed ports of a cell: the port set, or the queried ports that are allowed. */
function cellPorts(matrix: Matrix, from: number, to: number): PortSet {
  if (matrix.queries.length === 0) return matrix.ports(from, to);
  const allowed = matrix.queries.flatMap((query, q) => {
    if (!matrix.allowed(from, to, q)) return [];
    const destination = matrix.endpoints[to] as Endpoint;
    const port =
      typeof query.port === 'number'
        ? query.port
        : resolveNamedPort({ kind: 'endpoint', endpoint: destination }, query.port, query.protocol);
    return port === undefined ? [] : [{ protocol: query.protocol, from: port, to: port }];
  });
  return portSetOf(allowed);
}

/** Which ports of the query columns a port set allows (the graph of a per-port matrix shows only those). */
function restrictToQueries(matrix: Matrix, ports: PortSet): PortSet {
  if (matrix.queries.length === 0) return ports;
  const kept = matrix.queries.flatMap((q) =>
    typeof q.port === 'number' && portSetHas(ports, q.protocol, q.port)
      ? [{ protocol: q.protocol, from: q.port, to: q.port }]
      : [],
  );
  return portSetOf(kept);
}

/** The pods a matrix row stands for (a workload view's rows carry them; otherwise the row's endpoint). */
function rowMembers(matrix: Matrix, row: number): readonly Endpoint[] {
  const members = (matrix.rows[row] as { members?: readonly Endpoint[] } | undefined)?.members;
  return members ?? [matrix.endpoints[row] as Endpoint];
}

export function matrixGraph(
  matrix: Matrix,
  cluster: Cluster,
  options: MatrixGraphOptions = {},
): ConnectivityGraph {
  const groupBy = options.groupBy ?? 'workload';
  const n = matrix.endpoints.length;
  const nodeIds: string[] = [];
  const nodes = new Map<string, GraphNode>();
  for (let i = 0; i < n; i++) {
    const row = matrix.rows[i];
    const namespace = row?.namespace ?? (matrix.endpoints[i] as Endpoint).namespace;
    const label = row?.label ?? (matrix.endpoints[i] as Endpoint).id;
    const id = groupBy === 'namespace' ? `ns:${namespace}` : `ep:${label}`;
    nodeIds.push(id);
    if (!nodes.has(id))
      nodes.set(
        id,
        groupBy === 'namespace'
          ? { id, label: namespace, kind: 'namespace' }
          : { id, label, kind: 'endpoint', namespace },
      );
  }
  const edges = new Map<string, { from: string; to: string; ports: PortSet }>();
  const add = (from: string, to: string, ports: PortSet): void => {
    if (isNoPorts(ports)) return;
    const key = `${from}\u0000${to}`;
    const edge = edges.get(key);
    if (edge) edge.ports = unionPorts(edge.ports, ports);
    else edges.set(key, { from, to, ports });
  };
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++) {
      // A workload reaching itself is no edge worth drawing; a namespace's own traffic is.
      if (a === b && groupBy === 'workload') continue;
      add(nodeIds[a] as string, nodeIds[b] as string, cellPorts(matrix, a, b));
    }
  if (options.addresses !== false && n > 0) {
    const sided = new SidedEvaluator(cluster, options.semantics ?? 'v1');
    // Ranges reached (or reaching) alike are one node.
    const rows = new Map<
      string,
      { intervals: IpInterval[]; out: Map<string, PortSet>; into: Map<string, PortSet> }
    >();
    for (const range of addressRanges([cluster])) {
      const ip = { kind: 'ip' as const, ip: range.representative };
      const out = new Map<string, PortSet>();
      const into = new Map<string, PortSet>();
      for (let r = 0; r < n; r++) {
        // What every pod of the row may do, as the row's cells say.
        let egress = ALL_PORTS;
        let ingress = ALL_PORTS;
        for (const e of rowMembers(matrix, r)) {
          const endpoint = { kind: 'endpoint' as const, endpoint: e };
          egress = intersectPorts(egress, sided.ports(endpoint, ip));
          ingress = intersectPorts(ingress, sided.ports(ip, endpoint));
        }
        const id = nodeIds[r] as string;
        egress = restrictToQueries(matrix, egress);
        ingress = restrictToQueries(matrix, ingress);
        if (!isNoPorts(egress)) out.set(id, unionPorts(out.get(id) ?? EMPTY_PORTS, egress));
        if (!isNoPorts(ingress)) into.set(id, unionPorts(into.get(id) ?? EMPTY_PORTS, ingress));
      }
      if (out.size === 0 && into.size === 0) continue;
      const key =
        [...out].map(([k, v]) => `${k}>${formatPortSet(v)}`).join(';') +
        '|' +
        [...into].map(([k, v]) => `${k}<${formatPortSet(v)}`).join(';');
      const row = rows.get(key);
      if (row) row.intervals.push(range.interval);
      else rows.set(key, { intervals: [range.interval], out, into });
    }
    let i = 0;
    for (const row of rows.values()) {
      const id = `addr:${i++}`;
      nodes.set(id, {
        id,
        label: normalizeIntervals(row.intervals).map(formatInterval).join('\n'),
        kind: 'addresses',
      });
      for (const [node, ports] of row.out) add(node, id, ports);
      for (const [node, ports] of row.into) add(id, node, ports);
    }
  }
  return {
    title: `${n} ${groupBy === 'namespace' ? 'endpoints by namespace' : 'endpoints'}${matrix.queries.length ? ` on ${matrix.queries.map((q) => `${q.protocol}/${q.port}`).join(', ')}` : ''}`,
    nodes: [...nodes.values()],
    edges: [...edges.values()].map((e) => ({ from: e.from, to: e.to, label: formatPortSet(e.ports) })),
  };
}

/** A diff as a graph: only the connections that changed, coloured by how. */
export function diffGraph(diff: ConnectivityDiff, options: { groupBy?: GroupBy } = {}): ConnectivityGraph {
  const groupBy = options.groupBy ?? 'workload';
  const added = new Set(diff.endpoints.added.map((p) => p.label));
  const removed = new Set(diff.endpoints.removed.map((p) => p.label));
  const nodes = new Map<string, GraphNode>();
  const nodeOf = (peer: DiffPeer): string => {
    if (peer.type === 'addresses') {
      const id = `addr:${peer.id}`;
      if (!nodes.has(id))
        nodes.set(id, { id, label: peer.intervals.map(formatInterval).join('\n'), kind: 'addresses' });
      return id;
    }
    if (groupBy === 'namespace') {
      const id = `ns:${peer.namespace}`;
      if (!nodes.has(id)) nodes.set(id, { id, label: peer.namespace, kind: 'namespace' });
      return id;
    }
    const id = `ep:${peer.label}`;
    if (!nodes.has(id)) {
      const change = added.has(peer.label) ? 'added' : removed.has(peer.label) ? 'removed' : undefined;
      nodes.set(id, {
        id,
        label: peer.label,
        kind: 'endpoint',
        namespace: peer.namespace,
        ...(change ? { change } : {}),
      });
    }
    return id;
  };
  const edges = new Map<string, { from: string; to: string; labels: Set<string>; changes: Set<string> }>();
  for (const c of diff.connections) {
    const from = nodeOf(c.from);
    const to = nodeOf(c.to);
    const key = `${from}\u0000${to}`;
    const text =
      c.change === 'added'
        ? `+ ${formatPortSet(c.after)}`
        : c.change === 'removed'
          ? `− ${formatPortSet(c.before)}`
          : `${formatPortSet(c.before)} → ${formatPortSet(c.after)}`;
    const edge = edges.get(key) ?? { from, to, labels: new Set<string>(), changes: new Set<string>() };
    edge.labels.add(text);
    edge.changes.add(c.change);
    edges.set(key, edge);
  }
  return {
    title: `${diff.connections.length} connection${diff.connections.length === 1 ? '' : 's'} changed`,
    nodes: [...nodes.values()],
    edges: [...edges.values()].map((e) => ({
      from: e.from,
      to: e.to,
      label: [...e.labels].join('\n'),
      change: e.changes.size === 1 ? ([...e.changes][0] as GraphEdge['change'] & string) : 'changed',
    })),
  };
}
