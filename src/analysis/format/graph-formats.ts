/**
 * Graph outputs of `matrix` and `diff`: DOT text, SVG laid out by Graphviz (compiled to
 * WebAssembly, from npm — no program to install, no network), and one self-contained HTML file
 * (the SVG inline, styles and a few lines of pan-and-zoom script inline; nothing is fetched).
 */
import type { ConnectivityGraph, GraphEdge, GraphNode } from '../graph/graph.ts';

export const GRAPH_FORMATS = ['dot', 'svg', 'html'] as const;
export type GraphFormat = (typeof GRAPH_FORMATS)[number];

export function isGraphFormat(format: string): format is GraphFormat {
  return (GRAPH_FORMATS as readonly string[]).includes(format);
}

const quote = (text: string): string =>
  `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

const EDGE_STYLE: Record<NonNullable<GraphEdge['change']>, string> = {
  added: 'color="#1a7f37", fontcolor="#1a7f37", penwidth=1.6',
  removed: 'color="#cf222e", fontcolor="#cf222e", style=dashed',
  changed: 'color="#9a6700", fontcolor="#9a6700"',
};

function nodeLine(node: GraphNode, index: number): string {
  const shape =
    node.kind === 'addresses'
      ? 'shape=note, fillcolor="#fff8c5"'
      : node.kind === 'namespace'
        ? 'shape=folder'
        : '';
  const change =
    node.change === 'added'
      ? ', color="#1a7f37", penwidth=2'
      : node.change === 'removed'
        ? ', color="#cf222e", style="rounded,filled,dashed"'
        : '';
  const label =
    node.kind === 'endpoint' && node.namespace ? node.label.slice(node.namespace.length + 1) : node.label;
  return `${quote(node.id)} [id="n${index}", label=${quote(label)}${shape ? `, ${shape}` : ''}${change}];`;
}

/**
 * The graph in Graphviz's language; endpoints sit in a box per namespace. Two edges between the
 * same nodes with the same label, one each way, are drawn as one arrow with two heads (fewer
 * lines to cross, and labels to place). Nodes and edges carry ids (`n3`, `e7`: their positions in
 * the graph) that the SVG keeps, so a page can tell which one was clicked.
 */
function graphDot(graph: ConnectivityGraph): string {
  const lines = [
    'digraph palisade {',
    `  ${graph.title ? `label=${quote(graph.title)}; labelloc=t; ` : ''}fontname="Helvetica"; rankdir=TB; newrank=true; compound=true; nodesep=0.35; ranksep=0.5;`,
    '  node [shape=box, style="rounded,filled", fillcolor="#eef2ff", fontname="Helvetica", fontsize=11, margin="0.15,0.06"];',
    '  edge [fontname="Helvetica", fontsize=9, color="#57606a"];',
  ];
  const index = new Map(graph.nodes.map((n, i) => [n.id, i]));
  const byNamespace = new Map<string, GraphNode[]>();
  for (const node of graph.nodes) {
    if (node.kind !== 'endpoint' || !node.namespace) continue;
    const list = byNamespace.get(node.namespace) ?? [];
    list.push(node);
    byNamespace.set(node.namespace, list);
  }
  let i = 0;
  for (const [namespace, nodes] of byNamespace) {
    lines.push(
      `  subgraph cluster_${i++} {`,
      `    label=${quote(namespace)}; style="rounded"; color="#8c959f";`,
    );
    for (const node of nodes) lines.push(`    ${nodeLine(node, index.get(node.id) ?? 0)}`);
    lines.push('  }');
  }
  for (const node of graph.nodes)
    if (node.kind !== 'endpoint' || !node.namespace)
      lines.push(`  ${nodeLine(node, index.get(node.id) ?? 0)}`);
  const key = (e: GraphEdge): string => `${e.from}\u0000${e.to}\u0000${e.label}\u0000${e.change ?? ''}`;
  const present = new Set(graph.edges.map(key));
  const drawn = new Set<string>();
  graph.edges.forEach((edge, e) => {
    const reverse = { ...edge, from: edge.to, to: edge.from };
    const both = edge.from !== edge.to && present.has(key(reverse));
    if (both && drawn.has(key(reverse))) return;
    drawn.add(key(edge));
    lines.push(
      `  ${quote(edge.from)} -> ${quote(edge.to)} [id="e${e}", label=${quote(edge.label)}${both ? ', dir=both' : ''}${edge.change ? `, ${EDGE_STYLE[edge.change]}` : ''}];`,
    );
  });
  lines.push('}');
  return lines.join('\n') + '\n';
}

/**
 * About how long Graphviz's `dot` takes to lay a graph out, in seconds: measured on this
 * project's graphs (namespace boxes, labelled edges) — 800 edges 1.4 s, 10,000 edges a minute —
 * it grows with the edges about as their power 1.5. Used to refuse a layout that would run for
 * minutes rather than start it.
 */
export function layoutSeconds(graph: ConnectivityGraph): number {
  return 1.4 * (graph.edges.length / 800) ** 1.5 + graph.nodes.length / 500;
}

/** The graph laid out as SVG by Graphviz's `dot` (WebAssembly; loaded on first use). */
export async function graphSvg(graph: ConnectivityGraph): Promise<string> {
  const { Graphviz } = await import('@hpcc-js/wasm-graphviz');
  const graphviz = await Graphviz.load();
  return graphviz.dot(graphDot(graph), 'svg');
}

const escapeHtml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** One HTML file with everything inline: open it anywhere, offline. */
async function graphHtml(graph: ConnectivityGraph, legend: string): Promise<string> {
  const svg = (await graphSvg(graph)).replace(/^<\?xml[^>]*>\s*/, '').replace(/<!DOCTYPE[^>]*>\s*/, '');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(graph.title)} — Palisade</title>
<style>
  body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #1f2328; }
  header { padding: 0.6rem 1rem; border-bottom: 1px solid #d0d7de; }
  header h1 { font-size: 1.1rem; margin: 0 0 0.2rem; }
  header p { margin: 0; font-size: 0.85rem; color: #57606a; }
  #graph { overflow: hidden; height: calc(100vh - 4.5rem); cursor: grab; }
  #graph svg { transform-origin: 0 0; }
</style>
</head>
<body>
<header><h1>${escapeHtml(graph.title)}</h1><p>${escapeHtml(legend)} Drag to move, wheel to zoom.</p></header>
<div id="graph">${svg}</div>
<script>
(() => {
  const box = document.getElementById('graph');
  const svg = box.querySelector('svg');
  let x = 0, y = 0, scale = 1, drag = null;
  const apply = () => { svg.style.transform = 'translate(' + x + 'px,' + y + 'px) scale(' + scale + ')'; };
  box.addEventListener('wheel', (e) => {
    e.preventDefault();
    const factor = e.deltaY < 0 ? 1.1 : 1 / 1.1;
    const r = box.getBoundingClientRect();
    const px = e.clientX - r.left, py = e.clientY - r.top;
    x = px - (px - x) * factor; y = py - (py - y) * factor; scale *= factor; apply();
  }, { passive: false });
  box.addEventListener('mousedown', (e) => { drag = { x: e.clientX - x, y: e.clientY - y }; });
  window.addEventListener('mouseup', () => { drag = null; });
  window.addEventListener('mousemove', (e) => { if (drag) { x = e.clientX - drag.x; y = e.clientY - drag.y; apply(); } });
})();
</script>
</body>
</html>
`;
}

/** Writes a graph in one of the graph formats. */
export async function writeGraph(
  graph: ConnectivityGraph,
  format: GraphFormat,
  legend: string,
): Promise<string> {
  if (format === 'dot') return graphDot(graph);
  if (format === 'svg') return graphSvg(graph);
  return graphHtml(graph, legend);
}
