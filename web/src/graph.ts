/**
 * The graph of allowed connections, drawn by cytoscape: workloads inside their namespaces
 * (compound nodes), address ranges outside the cluster as nodes of their own, edges labelled
 * with ports. Clicking an edge asks why it is allowed. Large inputs are drawn by namespace.
 */
import type cytoscape from 'cytoscape';
import { api } from './api.ts';
import { clear, count, el } from './dom.ts';

interface GraphNode {
  readonly id: string;
  readonly label: string;
  readonly kind: 'endpoint' | 'namespace' | 'addresses';
  readonly namespace?: string;
}

interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly label: string;
}

interface Graph {
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
}

export interface GraphHost {
  port(): string;
  search(): string;
  explain(from: string, to: string, port: string): void;
  status(text: string): void;
}

/** Beyond this many workloads, one node per namespace (a layout of thousands is unreadable and slow). */
const MAX_WORKLOAD_NODES = 400;

export class GraphView {
  readonly root = el('section', { class: 'graph', 'aria-label': 'graph of allowed connections' });
  private readonly caption = el('p', { class: 'caption' });
  private readonly canvas = el('div', { class: 'cy' });
  private cy: cytoscape.Core | undefined;
  private groupBy: 'workload' | 'namespace' = 'workload';

  constructor(
    private readonly host: GraphHost,
    private readonly workloads: () => number,
  ) {
    this.root.append(this.caption, this.canvas);
  }

  async reload(): Promise<void> {
    this.groupBy = this.workloads() > MAX_WORKLOAD_NODES ? 'namespace' : 'workload';
    const started = performance.now();
    // cytoscape is loaded with the first graph, not with the page: the heatmap comes first.
    const [graph, { default: draw }] = await Promise.all([
      api<Graph>('/api/graph', { port: this.host.port(), 'group-by': this.groupBy }),
      import('cytoscape'),
    ]);
    this.draw(graph, draw);
    this.host.status(
      `graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges, ${Math.round(performance.now() - started)} ms`,
    );
  }

  /** Highlights the nodes the search text matches. */
  filter(): void {
    const text = this.host.search().trim().toLowerCase();
    this.cy?.batch(() => {
      this.cy?.nodes().forEach((node) => {
        const match = text !== '' && String(node.data('label')).toLowerCase().includes(text);
        node.toggleClass('match', match);
        node.toggleClass('faded', text !== '' && !match && !node.isParent());
      });
    });
  }

  private draw(graph: Graph, cytoscapeOf: typeof cytoscape): void {
    this.cy?.destroy();
    clear(this.canvas);
    this.caption.textContent =
      `${count(graph.nodes.length)} ${this.groupBy === 'namespace' ? 'namespaces and address ranges' : 'workloads and address ranges'}, ` +
      `${count(graph.edges.length)} allowed connections on ${this.host.port() === 'any' ? 'any port' : this.host.port()}` +
      (this.groupBy === 'namespace' && this.workloads() > MAX_WORKLOAD_NODES
        ? ` (by namespace: ${count(this.workloads())} workloads are too many to draw one by one)`
        : '') +
      '. Click an arrow to see why it is allowed.';
    const namespaces = new Set(
      graph.nodes.flatMap((n) => (n.kind === 'endpoint' && n.namespace ? [n.namespace] : [])),
    );
    const elements: cytoscape.ElementDefinition[] = [
      ...[...namespaces].map((ns) => ({ data: { id: `box:${ns}`, label: ns }, classes: 'namespace-box' })),
      ...graph.nodes.map((n) => ({
        data: {
          id: n.id,
          label: n.label.startsWith(`${n.namespace}/`)
            ? n.label.slice((n.namespace ?? '').length + 1)
            : n.label,
          ...(n.kind === 'endpoint' && n.namespace ? { parent: `box:${n.namespace}` } : {}),
        },
        classes: n.kind,
      })),
      ...graph.edges.map((e, i) => ({
        data: { id: `edge:${i}`, source: e.from, target: e.to, label: e.label },
        classes: e.from === e.to ? 'loop' : '',
      })),
    ];
    this.cy = cytoscapeOf({
      container: this.canvas,
      elements,
      wheelSensitivity: 0.3,
      layout:
        graph.nodes.length <= 250
          ? { name: 'cose', animate: false, nodeDimensionsIncludeLabels: true, randomize: false, padding: 30 }
          : { name: 'grid', avoidOverlap: true },
      style: [
        {
          selector: 'node',
          style: {
            label: 'data(label)',
            'font-size': 11,
            'text-valign': 'bottom',
            'text-margin-y': 4,
            'background-color': '#3b6fb6',
            width: 18,
            height: 18,
          },
        },
        { selector: 'node.addresses', style: { shape: 'round-rectangle', 'background-color': '#9c6b1f' } },
        { selector: 'node.namespace', style: { shape: 'round-rectangle', width: 26, height: 26 } },
        {
          selector: 'node.namespace-box',
          style: {
            'background-color': '#f3f5f8',
            'border-color': '#b7c0cc',
            'border-width': 1,
            'text-valign': 'top',
            'font-weight': 'bold',
            color: '#4a5566',
          },
        },
        {
          selector: 'edge',
          style: {
            width: 1.5,
            'curve-style': 'bezier',
            'target-arrow-shape': 'triangle',
            'line-color': '#7b8797',
            'target-arrow-color': '#7b8797',
            label: 'data(label)',
            'font-size': 9,
            'text-rotation': 'autorotate',
            'text-background-color': '#ffffff',
            'text-background-opacity': 0.8,
          },
        },
        {
          selector: 'edge:selected',
          style: { 'line-color': '#d9480f', 'target-arrow-color': '#d9480f', width: 3 },
        },
        { selector: 'node.match', style: { 'background-color': '#d9480f' } },
        { selector: 'node.faded', style: { opacity: 0.25 } },
      ],
    });
    this.cy.on('tap', 'edge', (event) => {
      const edge = event.target as cytoscape.EdgeSingular;
      const from = endpointName(String(edge.data('source')));
      const to = endpointName(String(edge.data('target')));
      if (!from || !to) {
        this.host.status(`${String(edge.data('label'))}: explanations are given between workloads`);
        return;
      }
      const chosen = this.host.port();
      this.host.explain(from, to, chosen !== 'any' ? chosen : firstPort(String(edge.data('label'))));
    });
    this.filter();
  }
}

/** `ep:shop/api[Deployment]` → `shop/api[Deployment]`; namespaces and addresses have none. */
function endpointName(id: string): string | undefined {
  return id.startsWith('ep:') ? id.slice(3) : undefined;
}

/** `TCP 5432,8000; UDP 53` → `5432/TCP`; a range gives its first port; `any` when there is none. */
function firstPort(label: string): string {
  const match = /(TCP|UDP|SCTP) ([0-9]+)/.exec(label);
  if (match) return `${match[2]}/${match[1]}`;
  return /TCP|all/.test(label) ? '1/TCP' : 'any';
}
