/**
 * A graph brought to a size a person can read and Graphviz can lay out in seconds: at most a few
 * hundred nodes and about a thousand edges. First nodes that connect alike — the same edges, with
 * the same ports, to and from the same nodes — become one (exactly: nothing is lost, a node says
 * how many it stands for); then, when still too many, the nodes with the fewest edges are folded
 * into one "other" node per kind, whose edges say what any of them may do. The result says what
 * was folded, so a picture never passes for the whole.
 */
import { EMPTY_PORTS, formatPortSet, unionPorts, type PortSet } from '../../semantics/index.ts';
import type { PortEdge, PortGraph } from './class-graph.ts';
import type { GraphNode } from './graph.ts';

export interface GraphBudget {
  /** Nodes at most (address ranges included). */
  readonly nodes: number;
  /** Edges at most. */
  readonly edges: number;
}

/** What a picture holds by default: readable, and laid out by Graphviz in a few seconds. */
export const PICTURE_BUDGET: GraphBudget = { nodes: 150, edges: 600 };

interface Aggregated {
  readonly graph: PortGraph;
  /** What was folded (for the title and the caption); undefined when nothing was. */
  readonly note?: string;
}

export function aggregateGraph(graph: PortGraph, budget: GraphBudget = PICTURE_BUDGET): Aggregated {
  if (fits(graph, budget)) return { graph };
  let current = graph;
  const folded: string[] = [];
  // Exact merges, a few rounds (a merge makes more nodes alike).
  for (let round = 0; round < 3; round++) {
    const next = mergeAlike(current);
    if (next.nodes.length === current.nodes.length) break;
    current = next;
  }
  if (current.nodes.length < graph.nodes.length)
    folded.push(
      `${count(graph.nodes.length)} nodes that connect alike drawn as ${count(current.nodes.length)}`,
    );
  // Then fold the least connected into one node per kind, until nodes and edges fit.
  let keep = Math.min(budget.nodes - 3, current.nodes.length);
  while (!fits(current, budget) && keep >= 1) {
    const before = current.nodes.length;
    current = foldLeastConnected(current, keep);
    if (current.nodes.length !== before)
      folded.push(`the least connected folded into "other" nodes, ${count(current.nodes.length)} nodes left`);
    keep = Math.floor(keep / 2);
  }
  return {
    graph: { ...current, title: `${graph.title} (${folded[folded.length - 1] ?? 'aggregated'})` },
    note: folded.join('; '),
  };
}

function fits(graph: PortGraph, budget: GraphBudget): boolean {
  return graph.nodes.length <= budget.nodes && graph.edges.length <= budget.edges;
}

const count = (n: number): string => n.toLocaleString('en-US');

/** Nodes of one kind with the same edges (ports included, a self edge as itself) become one. */
function mergeAlike(graph: PortGraph): PortGraph {
  const out = new Map<string, string[]>();
  const into = new Map<string, string[]>();
  for (const e of graph.edges) {
    const self = e.from === e.to;
    const text = formatPortSet(e.ports);
    push(out, e.from, self ? `self:${text}` : `${e.to}>${text}`);
    if (!self) push(into, e.to, `${e.from}<${text}`);
  }
  const groups = new Map<string, GraphNode[]>();
  for (const node of graph.nodes) {
    const key = `${node.kind}|${(out.get(node.id) ?? []).sort().join(';')}|${(into.get(node.id) ?? []).sort().join(';')}`;
    push(groups, key, node);
  }
  return regroup(graph, [...groups.values()]);
}

/** Keeps the `keep` best connected nodes (address ranges counted apart), folds the rest per kind. */
function foldLeastConnected(graph: PortGraph, keep: number): PortGraph {
  const degree = new Map<string, number>();
  for (const e of graph.edges) {
    degree.set(e.from, (degree.get(e.from) ?? 0) + 1);
    degree.set(e.to, (degree.get(e.to) ?? 0) + 1);
  }
  const ranked = [...graph.nodes].sort(
    (a, b) => (degree.get(b.id) ?? 0) - (degree.get(a.id) ?? 0) || (a.id < b.id ? -1 : 1),
  );
  const kept = new Set(ranked.slice(0, keep).map((n) => n.id));
  const groups: GraphNode[][] = [];
  const rest = new Map<string, GraphNode[]>();
  for (const node of graph.nodes) {
    if (kept.has(node.id)) groups.push([node]);
    else push(rest, node.kind, node);
  }
  groups.push(...rest.values());
  return regroup(graph, groups, true);
}

/** The graph with each group of nodes as one node; edges between groups unioned. */
function regroup(graph: PortGraph, groups: readonly GraphNode[][], others = false): PortGraph {
  const nodeOf = new Map<string, string>();
  const nodes: GraphNode[] = [];
  const sizes = new Map<string, number>();
  let k = 0;
  for (const members of groups) {
    const first = members[0];
    if (!first) continue;
    if (members.length === 1) {
      nodeOf.set(first.id, first.id);
      nodes.push(first);
      sizes.set(first.id, graph.sizes.get(first.id) ?? 1);
      continue;
    }
    const id = `group:${k++}`;
    for (const m of members) nodeOf.set(m.id, id);
    const namespaces = new Set(members.map((m) => m.namespace));
    const namespace = namespaces.size === 1 ? first.namespace : undefined;
    nodes.push({
      id,
      label: groupLabel(members, others),
      kind: first.kind,
      ...(namespace !== undefined && first.kind === 'endpoint' ? { namespace } : {}),
    });
    sizes.set(
      id,
      members.reduce((n, m) => n + (graph.sizes.get(m.id) ?? 1), 0),
    );
  }
  const merged = new Map<string, PortEdge & { ports: PortSet }>();
  for (const e of graph.edges) {
    const from = nodeOf.get(e.from) ?? e.from;
    const to = nodeOf.get(e.to) ?? e.to;
    const key = `${from}\u0000${to}`;
    const found = merged.get(key);
    merged.set(key, { from, to, ports: unionPorts(found?.ports ?? EMPTY_PORTS, e.ports) });
  }
  return { title: graph.title, nodes, edges: [...merged.values()], sizes };
}

/** `ns-1, ns-2 and 98 more (100 namespaces)`; address ranges by their first lines. */
function groupLabel(members: readonly GraphNode[], others: boolean): string {
  const kind = members[0]?.kind;
  const noun = kind === 'namespace' ? 'namespaces' : kind === 'addresses' ? 'address ranges' : 'workloads';
  const names = members.map((m) => (kind === 'addresses' ? (m.label.split('\n')[0] ?? '') : m.label));
  if (others) return `${count(members.length)} other ${noun}`;
  const shown =
    names.length <= 3
      ? names.join(', ')
      : `${names.slice(0, 2).join(', ')} and ${count(names.length - 2)} more`;
  return `${shown} (${count(members.length)} ${noun})`;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
