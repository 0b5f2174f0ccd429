/**
 * Connectivity as a graph for people to look at: nodes are endpoints (workloads, or pods) or
 * namespaces (`groupBy: 'namespace'`), plus address ranges outside the cluster; an edge says which
 * ports one node may use to reach another (or, for a diff, how that changed). The graph of a
 * matrix is built from classes (class-graph.ts); a diff's here. Laid out by Graphviz
 * (format/graph-formats.ts).
 */
import { formatInterval } from '../../net/intervals.ts';
import { formatPortSet } from '../../semantics/index.ts';
import type { ConnectivityDiff, DiffPeer } from '../diff/types.ts';

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
