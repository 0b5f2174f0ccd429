/**
 * The reachability heatmap: namespaces × namespaces, drilling down to the workloads of a pair
 * of namespaces, then to the pods of a pair of workloads. One click on a cell says why (for one
 * pod pair it stands for) and opens the cell. Cells are as large as the space allows, drawn on a
 * canvas only where they are in view (2,500 namespaces are 6 million cells; the server sends
 * only the cells with an allowed pod pair); row and column labels are elements (text, never
 * markup) for the rows and columns in view. Every colour drawn is in the legend.
 */
import { api, type HeatAxis, type Heatmap } from './api.ts';
import { clear, count, el } from './dom.ts';

/** What the heatmap needs from the page around it. */
export interface HeatmapHost {
  port(): string;
  search(): string;
  /** A cell was clicked: show why one of its pod pairs is allowed or denied. */
  why(level: 'namespace' | 'workload' | 'pod', from: string, to: string): void;
  status(text: string): void;
}

interface Level {
  readonly level: Heatmap['level'];
  readonly from?: string;
  readonly to?: string;
  readonly title: string;
}

const LABEL_WIDTH = 230;
const LABEL_HEIGHT = 150;
/** As large as the space allows up to this: a few namespaces fill the view, as many do. */
const MAX_CELL = 160;
const MIN_CELL = 3;
/** Labels are written only where a row is tall enough to read them. */
const MIN_LABELLED = 10;

export class HeatmapView {
  readonly root = el('section', { class: 'heatmap', 'aria-label': 'reachability heatmap' });
  private readonly crumbs = el('nav', { class: 'crumbs' });
  private readonly caption = el('p', { class: 'caption' });
  private readonly scroller = el('div', { class: 'scroller' });
  private readonly spacer = el('div', { class: 'spacer' });
  private readonly viewport = el('div', { class: 'viewport' });
  private readonly canvas = el('canvas', { class: 'cells' });
  private readonly rowLabels = el('div', { class: 'row-labels' });
  private readonly columnLabels = el('div', { class: 'column-labels' });
  private readonly tooltip = el('div', { class: 'tooltip', role: 'status', hidden: true });
  private stack: Level[] = [{ level: 'namespace', title: 'All namespaces' }];
  private data: Heatmap | undefined;
  private rowCells = new Map<number, [number, number][]>();
  private shown: number[] = [];
  private cell = MAX_CELL;
  private frame = 0;
  private loading = 0;
  /** The first view's heatmap, embedded in the document: shown by the first reload that wants it. */
  private preloaded: Heatmap | undefined;
  private preloadedPort = '';

  constructor(private readonly host: HeatmapHost) {
    this.viewport.append(this.canvas, this.rowLabels, this.columnLabels);
    this.spacer.append(this.viewport);
    this.scroller.append(this.spacer);
    this.root.append(this.crumbs, this.caption, this.scroller, this.tooltip, this.legend());
    this.scroller.addEventListener('scroll', () => this.schedule());
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => (this.tooltip.hidden = true));
    this.canvas.addEventListener('click', (e) => this.click(e));
    new ResizeObserver(() => this.layout()).observe(this.scroller);
  }

  /** The namespace heatmap of `port` that came with the document, for the first reload. */
  preload(data: Heatmap, port: string): void {
    this.preloaded = data;
    this.preloadedPort = port;
  }

  /** Loads the current level again (a new port, a new snapshot of the input). */
  async reload(): Promise<void> {
    const level = this.stack[this.stack.length - 1] as Level;
    const ticket = ++this.loading;
    const started = performance.now();
    const preloaded = this.preloaded;
    this.preloaded = undefined;
    this.root.setAttribute('aria-busy', 'true');
    try {
      const data =
        preloaded && level.level === 'namespace' && this.preloadedPort === this.host.port()
          ? preloaded
          : await api('/api/heatmap', {
              level: level.level,
              port: this.host.port(),
              from: level.from,
              to: level.to,
            });
      if (ticket !== this.loading) return;
      this.show(data);
      this.host.status(
        `${data.rows.length} × ${data.columns.length} ${level.level}s on ${data.port}: ${Math.round(performance.now() - started)} ms`,
      );
    } catch (error) {
      // A drilled-into namespace or workload that is gone after a change: back to the top.
      if (this.stack.length > 1) {
        this.stack = [this.stack[0] as Level];
        return this.reload();
      }
      this.host.status(`heatmap: ${(error as Error).message}`);
    } finally {
      if (ticket === this.loading) this.root.removeAttribute('aria-busy');
    }
  }

  /** The search text changed: show only the rows it matches. */
  filter(): void {
    if (!this.data) return;
    this.applyFilter();
    this.layout();
  }

  private show(data: Heatmap): void {
    this.data = data;
    this.rowCells = new Map();
    for (const [r, c, n] of data.cells) {
      let list = this.rowCells.get(r);
      if (!list) this.rowCells.set(r, (list = []));
      list.push([c, n]);
    }
    this.renderCrumbs();
    this.applyFilter();
    this.layout();
  }

  private applyFilter(): void {
    const data = this.data as Heatmap;
    const text = this.host.search().trim().toLowerCase();
    this.shown = [];
    for (let r = 0; r < data.rows.length; r++) {
      const row = data.rows[r] as HeatAxis;
      if (!text || row.id.toLowerCase().includes(text)) this.shown.push(r);
    }
    const level = this.stack[this.stack.length - 1] as Level;
    this.caption.textContent =
      `${level.level === 'namespace' ? 'Namespaces' : level.level === 'workload' ? 'Workloads' : 'Pods'}: ` +
      `rows are sources, columns destinations; ${count(this.shown.length)} of ${count(data.rows.length)} rows` +
      (text ? ` match "${this.host.search().trim()}"` : '') +
      `, port ${data.port}. ${level.level === 'pod' ? 'Click a cell to see why.' : 'Click a cell to see why and look inside.'}`;
  }

  private renderCrumbs(): void {
    clear(this.crumbs);
    this.stack.forEach((level, i) => {
      if (i > 0) this.crumbs.append(' › ');
      const last = i === this.stack.length - 1;
      this.crumbs.append(
        last
          ? el('span', { class: 'current' }, level.title)
          : el(
              'button',
              {
                type: 'button',
                class: 'link',
                onclick: () => {
                  this.stack = this.stack.slice(0, i + 1);
                  void this.reload();
                },
              },
              level.title,
            ),
      );
    });
  }

  private layout(): void {
    const data = this.data;
    if (!data) return;
    const width = Math.max(200, this.scroller.clientWidth - LABEL_WIDTH - 4);
    const height = Math.max(200, this.scroller.clientHeight - LABEL_HEIGHT - 4);
    const fit = Math.floor(
      Math.min(width / Math.max(1, data.columns.length), height / Math.max(1, this.shown.length)),
    );
    this.cell = Math.max(MIN_CELL, Math.min(MAX_CELL, fit));
    this.spacer.style.width = `${LABEL_WIDTH + data.columns.length * this.cell}px`;
    this.spacer.style.height = `${LABEL_HEIGHT + this.shown.length * this.cell}px`;
    this.viewport.style.width = `${this.scroller.clientWidth}px`;
    this.viewport.style.height = `${this.scroller.clientHeight}px`;
    this.canvas.dataset.cell = String(this.cell);
    this.canvas.dataset.labelWidth = String(LABEL_WIDTH);
    this.canvas.dataset.labelHeight = String(LABEL_HEIGHT);
    this.draw();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Draws what is in view: cells on the canvas, labels as elements. */
  private draw(): void {
    const data = this.data;
    if (!data) return;
    const ratio = window.devicePixelRatio || 1;
    const w = this.scroller.clientWidth;
    const h = this.scroller.clientHeight;
    this.canvas.width = Math.round(w * ratio);
    this.canvas.height = Math.round(h * ratio);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    const g = this.canvas.getContext('2d') as CanvasRenderingContext2D;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    const { cell } = this;
    const left = this.scroller.scrollLeft;
    const top = this.scroller.scrollTop;
    const k0 = Math.max(0, Math.floor(top / cell));
    const k1 = Math.min(this.shown.length, Math.ceil((top + h - LABEL_HEIGHT) / cell));
    const c0 = Math.max(0, Math.floor(left / cell));
    const c1 = Math.min(data.columns.length, Math.ceil((left + w - LABEL_WIDTH) / cell));
    const x = (c: number): number => LABEL_WIDTH + c * cell - left;
    const y = (k: number): number => LABEL_HEIGHT + k * cell - top;
    g.save();
    g.beginPath();
    g.rect(LABEL_WIDTH, LABEL_HEIGHT, w - LABEL_WIDTH, h - LABEL_HEIGHT);
    g.clip();
    // Denied everywhere, then the allowed cells in view over it.
    g.fillStyle = DENIED;
    g.fillRect(x(c0), y(k0), (c1 - c0) * cell, (k1 - k0) * cell);
    const gap = cell >= 6 ? 1 : 0;
    for (let k = k0; k < k1; k++) {
      const r = this.shown[k] as number;
      const row = data.rows[r] as HeatAxis;
      for (let c = c0; c < c1; c++) {
        const column = data.columns[c] as HeatAxis;
        if (row.id === column.id && row.pods === 1) {
          g.fillStyle = ITSELF;
          g.fillRect(x(c), y(k), cell, cell);
        }
      }
      for (const [c, n] of this.rowCells.get(r) ?? []) {
        if (c < c0 || c >= c1) continue;
        g.fillStyle = colour(n / pairs(row, data.columns[c] as HeatAxis));
        g.fillRect(x(c), y(k), cell - gap, cell - gap);
      }
    }
    if (gap) {
      g.strokeStyle = '#ffffff';
      g.lineWidth = 1;
      g.beginPath();
      for (let k = k0; k <= k1; k++) {
        g.moveTo(x(c0), y(k) - 0.5);
        g.lineTo(x(c1), y(k) - 0.5);
      }
      for (let c = c0; c <= c1; c++) {
        g.moveTo(x(c) - 0.5, y(k0));
        g.lineTo(x(c) - 0.5, y(k1));
      }
      g.stroke();
    }
    g.restore();
    this.drawLabels(k0, k1, c0, c1, y, x);
  }

  private drawLabels(
    k0: number,
    k1: number,
    c0: number,
    c1: number,
    y: (k: number) => number,
    x: (c: number) => number,
  ): void {
    const data = this.data as Heatmap;
    clear(this.rowLabels);
    clear(this.columnLabels);
    if (this.cell < MIN_LABELLED) return;
    for (let k = k0; k < k1; k++) {
      const r = this.shown[k] as number;
      const row = data.rows[r] as HeatAxis;
      this.rowLabels.append(
        el(
          'div',
          {
            class: 'row-label',
            'data-index': k,
            title: `${row.id} (${row.pods} pods)`,
            style: `top:${y(k)}px;height:${this.cell}px;line-height:${this.cell}px`,
          },
          row.label,
        ),
      );
    }
    for (let c = c0; c < c1; c++) {
      const column = data.columns[c] as HeatAxis;
      this.columnLabels.append(
        el(
          'div',
          {
            class: 'column-label',
            'data-index': c,
            title: `${column.id} (${column.pods} pods)`,
            style: `left:${x(c) + this.cell / 2}px`,
          },
          column.label,
        ),
      );
    }
  }

  private cellAt(event: MouseEvent): { row: HeatAxis; column: HeatAxis; allowed: number } | undefined {
    const data = this.data;
    if (!data) return undefined;
    const box = this.canvas.getBoundingClientRect();
    const px = event.clientX - box.left - LABEL_WIDTH + this.scroller.scrollLeft;
    const py = event.clientY - box.top - LABEL_HEIGHT + this.scroller.scrollTop;
    if (px < 0 || py < 0) return undefined;
    const k = Math.floor(py / this.cell);
    const c = Math.floor(px / this.cell);
    if (k >= this.shown.length || c >= data.columns.length) return undefined;
    const r = this.shown[k] as number;
    const allowed = this.rowCells.get(r)?.find(([col]) => col === c)?.[1] ?? 0;
    return { row: data.rows[r] as HeatAxis, column: data.columns[c] as HeatAxis, allowed };
  }

  private hover(event: MouseEvent): void {
    const found = this.cellAt(event);
    if (!found) {
      this.tooltip.hidden = true;
      return;
    }
    const { row, column, allowed } = found;
    const total = pairs(row, column);
    this.tooltip.textContent =
      total === 0
        ? `${row.id}: itself`
        : `${row.id} → ${column.id}: ${allowed === 0 ? 'denied' : allowed === total ? 'allowed' : 'partly allowed'} (${count(allowed)} of ${count(total)} pod pairs) on ${(this.data as Heatmap).port}`;
    this.tooltip.hidden = false;
    const box = this.root.getBoundingClientRect();
    this.tooltip.style.left = `${event.clientX - box.left + 14}px`;
    this.tooltip.style.top = `${event.clientY - box.top + 14}px`;
  }

  private click(event: MouseEvent): void {
    const found = this.cellAt(event);
    if (!found || pairs(found.row, found.column) === 0) return;
    const level = (this.stack[this.stack.length - 1] as Level).level;
    const { row, column } = found;
    this.tooltip.hidden = true;
    // Why, at once — and, above the pods, the cell opens beside it.
    this.host.why(level, row.id, column.id);
    if (level === 'pod') return;
    const next: Level =
      level === 'namespace'
        ? { level: 'workload', from: row.id, to: column.id, title: `${row.id} → ${column.id}` }
        : { level: 'pod', from: row.id, to: column.id, title: `${row.label} → ${column.label}` };
    this.stack.push(next);
    this.scroller.scrollTo(0, 0);
    void this.reload();
  }

  private legend(): HTMLElement {
    const swatch = (background: string, text: string): HTMLElement =>
      el('span', { class: 'swatch' }, el('i', { style: `background:${background}` }), text);
    return el(
      'p',
      { class: 'legend' },
      swatch(colour(1), 'every pod pair allowed'),
      swatch(colour(0.5), 'half or more allowed'),
      swatch(colour(0.1), 'fewer than half allowed'),
      swatch(DENIED, 'denied'),
      swatch(ITSELF, 'one pod with itself (no pair)'),
    );
  }
}

const DENIED = '#e8ebef';
const ITSELF = '#ffffff';

/** Pod pairs of a cell: a pod's connection to itself does not count. */
function pairs(row: HeatAxis, column: HeatAxis): number {
  return row.pods * column.pods - (row.id === column.id ? row.pods : 0);
}

/** Three greens, one per legend entry: every pod pair, half or more, fewer than half. */
function colour(fraction: number): string {
  if (fraction >= 1) return 'hsl(145 55% 34%)';
  if (fraction >= 0.5) return 'hsl(145 55% 52%)';
  return 'hsl(145 55% 74%)';
}
