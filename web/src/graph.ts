/**
 * The graph of allowed connections, drawn by the server with Graphviz — the drawing of
 * `palisade matrix -o svg`: workloads in a box per namespace (boxes never overlap, labels sit by
 * their arrows), address ranges outside the cluster as notes. A large input comes as namespaces,
 * brought to a readable size; clicking a namespace shows its workloads and their peers (a click on
 * the caption's link goes back). Clicking an arrow asks why, for one pod pair it stands for.
 * Drag to move, wheel to zoom. With observed flows, the arrows that carried traffic are drawn
 * thick, and the nodes of observed denied flows (which have no arrow: the graph is of what is
 * allowed) are outlined, the caption naming the first few — at any level of aggregation, since
 * the server places each flow on the nodes its pods are drawn in.
 */
import { api, type GraphAnswer, type ObservedOnGraph, type ObservedPair } from './api.ts';
import { clear, count, el, svgFrom } from './dom.ts';
import { fitLabels } from './fit-labels.ts';

/** A graph as drawn: `/api/graph` asked with `svg=1`. */
type Graph = GraphAnswer & { readonly svg: string };
type GraphNode = Graph['nodes'][number];

export interface GraphHost {
  port(): string;
  search(): string;
  /** Why one pod pair of `from` → `to` (namespaces or workloads) is allowed or denied. */
  why(level: 'namespace' | 'workload', from: string, to: string): void;
  status(text: string): void;
  /** Whether serve has observed flows to mark on the graph. */
  flows(): boolean;
}

export class GraphView {
  readonly root = el('section', { class: 'graph', 'aria-label': 'graph of allowed connections' });
  private readonly caption = el('p', { class: 'caption' });
  private readonly canvas = el('div', { class: 'drawing', 'aria-busy': 'true' });
  private graph: Graph | undefined;
  private namespace: string | undefined;
  private view = { x: 0, y: 0, scale: 1 };

  constructor(private readonly host: GraphHost) {
    this.root.append(this.caption, this.canvas);
    let drag: { x: number; y: number } | undefined;
    this.canvas.addEventListener(
      'mousedown',
      (e) => (drag = { x: e.clientX - this.view.x, y: e.clientY - this.view.y }),
    );
    window.addEventListener('mouseup', () => (drag = undefined));
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      this.view.x = e.clientX - drag.x;
      this.view.y = e.clientY - drag.y;
      this.apply();
    });
    this.canvas.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        const factor = e.deltaY < 0 ? 1.1 : 1 / 1.1;
        const box = this.canvas.getBoundingClientRect();
        const px = e.clientX - box.left;
        const py = e.clientY - box.top;
        this.view.x = px - (px - this.view.x) * factor;
        this.view.y = py - (py - this.view.y) * factor;
        this.view.scale *= factor;
        this.apply();
      },
      { passive: false },
    );
    this.canvas.addEventListener('click', (e) => this.click(e));
  }

  async reload(): Promise<void> {
    const started = performance.now();
    this.canvas.setAttribute('aria-busy', 'true');
    try {
      const answer = await api('/api/graph', {
        port: this.host.port(),
        'group-by': 'auto',
        namespace: this.namespace,
        svg: '1',
        flows: this.host.flows() ? '1' : undefined,
      });
      if (answer.svg === undefined) throw new Error('the server sent no drawing');
      const graph: Graph = { ...answer, svg: answer.svg };
      this.graph = graph;
      this.draw(graph);
      this.host.status(
        `graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges, ${Math.round(performance.now() - started)} ms`,
      );
    } catch (error) {
      clear(this.canvas);
      this.caption.textContent = `The graph cannot be drawn: ${(error as Error).message}`;
      this.host.status(`graph: ${(error as Error).message}`);
    } finally {
      this.canvas.removeAttribute('aria-busy');
    }
  }

  /**
   * New observed flows: the marks are drawn again on the drawing shown (its position and zoom
   * kept); the graph itself comes from the input, which has not changed.
   */
  async reloadObserved(): Promise<void> {
    const graph = this.graph;
    if (!graph || !this.host.flows()) return;
    const fresh = await api('/api/graph', {
      port: this.host.port(),
      'group-by': 'auto',
      namespace: this.namespace,
      flows: '1',
    });
    // Another graph meanwhile (a port or namespace chosen): its own reload marks it.
    if (this.graph !== graph || fresh.edges.length !== graph.edges.length) return;
    for (const mark of this.canvas.querySelectorAll('.observed, .flow-denied, .flow-unexpected'))
      mark.classList.remove('observed', 'flow-denied', 'flow-unexpected');
    this.caption.querySelector('.observed-caption')?.remove();
    if (fresh.observed) this.markObserved(graph, fresh.observed);
  }

  /** Highlights the nodes the search text matches. */
  filter(): void {
    const text = this.host.search().trim().toLowerCase();
    for (const node of this.canvas.querySelectorAll<SVGGElement>('g.node')) {
      const label = node.querySelector('text')?.textContent?.toLowerCase() ?? '';
      const match = text !== '' && label.includes(text);
      node.classList.toggle('match', match);
      node.classList.toggle('faded', text !== '' && !match);
    }
  }

  private draw(graph: Graph): void {
    clear(this.canvas);
    clear(this.caption);
    const namespaces = graph.nodes.some((n) => n.kind === 'namespace');
    this.caption.append(
      `${graph.title}: ${count(graph.nodes.length)} ${graph.nodes.length === 1 ? 'node' : 'nodes'}, ${count(graph.edges.length)} allowed ${graph.edges.length === 1 ? 'connection' : 'connections'} on ${this.host.port() === 'any' ? 'any port' : this.host.port()}. `,
      namespaces
        ? 'Click a namespace for its workloads, an arrow to see why. '
        : 'Click an arrow to see why. ',
      this.namespace !== undefined
        ? el(
            'button',
            {
              type: 'button',
              class: 'link',
              onclick: () => {
                this.namespace = undefined;
                void this.reload();
              },
            },
            'Back to every namespace',
          )
        : '',
    );
    const svg = svgFrom(graph.svg);
    if (!svg) return;
    this.canvas.append(svg);
    fitLabels(svg);
    // Fit the drawing to the space it has (never enlarged past its own size).
    const box = this.canvas.getBoundingClientRect();
    const width = svg.width.baseVal.value || 1;
    const height = svg.height.baseVal.value || 1;
    const scale = Math.min(1, box.width / width, box.height / height);
    this.view = { x: Math.max(0, (box.width - width * scale) / 2), y: 0, scale };
    this.apply();
    this.filter();
    if (graph.observed) this.markObserved(graph, graph.observed);
  }

  /** Arrows that carried observed traffic, and the nodes of observed flows no arrow stands for. */
  private markObserved(graph: Graph, observed: ObservedOnGraph): void {
    const label = (id: string): string => graph.nodes.find((n) => n.id === id)?.label ?? id;
    const node = (id: string): Element | null => {
      const index = graph.nodes.findIndex((n) => n.id === id);
      return index < 0 ? null : this.canvas.querySelector(`g.node[id="n${index}"]`);
    };
    let carried = 0;
    const unmatched: ObservedPair[] = [];
    for (const pair of observed.pairs) {
      const edge = pair.edge !== undefined ? this.canvas.querySelector(`g.edge[id="e${pair.edge}"]`) : null;
      if (edge && pair.allowed > 0) {
        carried++;
        edge.classList.add('observed');
        edge.setAttribute('data-observed', String(pair.allowed));
      }
      if (pair.denied > 0 || !edge) {
        unmatched.push(pair);
        for (const id of [pair.from, pair.to])
          node(id)?.classList.add(pair.denied > 0 ? 'flow-denied' : 'flow-unexpected');
      }
    }
    const denied = unmatched.filter((p) => p.denied > 0);
    const unexpected = unmatched.filter((p) => p.denied === 0);
    const pairText = (p: ObservedPair, n: number): string => `${label(p.from)} → ${label(p.to)} ×${count(n)}`;
    this.caption.append(
      el(
        'span',
        { class: 'observed-caption' },
        ` Observed: ${count(carried)} ${carried === 1 ? 'arrow' : 'arrows'} carried traffic (drawn thick)`,
        denied.length
          ? `; denied (nodes outlined red): ${denied
              .slice(0, 4)
              .map((p) => pairText(p, p.denied))
              .join(', ')}${denied.length > 4 ? ` and ${count(denied.length - 4)} more` : ''}`
          : '',
        unexpected.length
          ? `; allowed where the input draws no arrow (outlined orange): ${unexpected
              .slice(0, 4)
              .map((p) => pairText(p, p.allowed))
              .join(', ')}${unexpected.length > 4 ? ` and ${count(unexpected.length - 4)} more` : ''}`
          : '',
        observed.unplaced ? `; ${count(observed.unplaced)} flows between nodes not drawn here` : '',
        '. The Flows tab lists them.',
      ),
    );
  }

  private apply(): void {
    const svg = this.canvas.querySelector('svg');
    if (svg) svg.style.transform = `translate(${this.view.x}px, ${this.view.y}px) scale(${this.view.scale})`;
  }

  /** An arrow: why; a namespace: its workloads. Graphviz keeps the ids `eN`/`nN` (their positions). */
  private click(event: MouseEvent): void {
    const graph = this.graph;
    if (!graph) return;
    const target = event.target as Element | null;
    const edge = target?.closest('g.edge');
    if (edge) {
      const found = graph.edges[Number(edge.id.slice(1))];
      if (!found) return;
      const from = graph.nodes.find((n) => n.id === found.from);
      const to = graph.nodes.find((n) => n.id === found.to);
      const level = (n: GraphNode | undefined) =>
        n?.kind === 'namespace' && !n.id.startsWith('group:')
          ? 'namespace'
          : n?.kind === 'endpoint'
            ? 'workload'
            : undefined;
      const a = level(from);
      const b = level(to);
      if (!from || !to || !a || a !== b) {
        this.host.status(`${found.label}: explanations are given between namespaces or between workloads`);
        return;
      }
      this.host.why(a, name(from), name(to));
      return;
    }
    const node = target?.closest('g.node');
    if (!node) return;
    const found = graph.nodes[Number(node.id.slice(1))];
    if (found?.kind === 'namespace' && found.id.startsWith('ns:')) {
      this.namespace = found.id.slice(3);
      void this.reload();
    }
  }
}

/** What `/api/why` takes for a node: `ns` or `ns/name[Kind]`. */
function name(node: GraphNode): string {
  return node.id.replace(/^(ns|ep):/, '');
}
