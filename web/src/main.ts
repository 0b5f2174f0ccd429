/**
 * The page of `palisade serve`: a header with the input's counts, the port selector and the
 * search box; tabs for the heatmap, the graph, lint, the diff and (with a flow source) the
 * observed flows; a details panel for explanations and sources. The server's event stream says
 * when the input or the observed flows changed: the page then reloads the data it shows, keeping
 * where the user is.
 */
import './style.css';
import { api, type SummaryAnswer, type VersionEvent } from './api.ts';
import { clear, count, el } from './dom.ts';
import { DiffView } from './diff-view.ts';
import { FlowsView } from './flows-view.ts';
import { takeFirstView } from './first-view.ts';
import { ExplainPanel } from './explain.ts';
import { GraphView } from './graph.ts';
import { HeatmapView } from './heatmap.ts';
import { LintView } from './lint-view.ts';

type Tab = 'heatmap' | 'graph' | 'lint' | 'diff' | 'flows';

class App {
  private summary: SummaryAnswer | undefined;
  private shownVersion = 0;
  private tab: Tab = 'heatmap';
  private readonly counts = el('span', { class: 'counts' });
  private readonly live = el(
    'span',
    { class: 'live', title: 'updates when the input files change' },
    'connecting…',
  );
  private readonly portSelect = el('select', { 'aria-label': 'port', name: 'port' });
  private readonly searchBox = el('input', {
    type: 'search',
    placeholder: 'search names',
    'aria-label': 'search',
    name: 'search',
  });
  private readonly tabs = el('nav', { class: 'tabs', role: 'tablist' });
  private readonly main = el('main');
  private readonly statusLine = el('footer', { class: 'status', role: 'status' });
  private readonly details = new ExplainPanel(() => this.summary?.ports ?? []);
  private readonly heatmap = new HeatmapView({
    port: () => this.portSelect.value,
    search: () => this.searchBox.value,
    why: (level, from, to) => void this.details.why(level, from, to, this.portSelect.value),
    status: (text) => this.status(text),
  });
  private readonly graph = new GraphView({
    port: () => this.portSelect.value,
    search: () => this.searchBox.value,
    why: (level, from, to) => void this.details.why(level, from, to, this.portSelect.value),
    status: (text) => this.status(text),
    flows: () => this.summary?.flows != null,
  });
  private readonly flows = new FlowsView(this.details, () => this.searchBox.value);
  private readonly lint = new LintView(this.details, () => this.searchBox.value);
  private readonly diff = new DiffView(this.details, () => this.searchBox.value);

  async start(): Promise<void> {
    document.body.append(
      el(
        'header',
        {},
        el('h1', {}, 'Palisade'),
        this.counts,
        el('label', {}, 'port ', this.portSelect),
        this.searchBox,
        this.live,
      ),
      this.tabs,
      el('div', { class: 'body' }, this.main, this.details.root),
      this.statusLine,
    );
    this.portSelect.addEventListener('change', () => void this.refresh());
    let typing: number | undefined;
    this.searchBox.addEventListener('input', () => {
      clearTimeout(typing);
      typing = window.setTimeout(() => this.filter(), 120);
    });
    // The first view's data came with the document: no request before it is drawn.
    const first = takeFirstView();
    await this.loadSummary(first?.summary);
    if (first?.heatmap) this.heatmap.preload(first.heatmap, first.port);
    this.select(this.tab);
    this.listen();
  }

  private async loadSummary(embedded?: SummaryAnswer): Promise<void> {
    const summary = embedded ?? (await api('/api/summary'));
    this.summary = summary;
    this.shownVersion = summary.version;
    document.body.dataset.version = String(summary.version);
    this.counts.textContent =
      `${count(summary.namespaces)} namespaces · ${count(summary.workloads)} workloads · ${count(summary.pods)} pods · ` +
      `${count(summary.policies)} policies` +
      // Each ordered kind by its name: Calico's and Cilium's namespaced policies are no cluster policies.
      summary.policyKinds.map((words) => ` · ${words}`).join('') +
      ` · ${summary.diagnosticCounts}`;
    // The first time, the address may choose the port: /?port=8080/TCP.
    // The server's choice otherwise (large inputs start on one port), whose heatmap it computed ahead.
    const chosen =
      this.portSelect.value || (new URLSearchParams(location.search).get('port') ?? summary.defaultPort);
    clear(this.portSelect);
    this.portSelect.append(el('option', { value: 'any' }, 'any port'));
    for (const port of summary.ports) this.portSelect.append(el('option', { value: port }, port));
    if (![...this.portSelect.options].some((o) => o.value === chosen))
      this.portSelect.append(el('option', { value: chosen }, chosen));
    this.portSelect.value = chosen;
    this.renderTabs();
    if (summary.readError) this.status(`the input could not be read again: ${summary.readError}`);
  }

  private renderTabs(): void {
    clear(this.tabs);
    const tabs: [Tab, string][] = [
      ['heatmap', 'Heatmap'],
      ['graph', 'Graph'],
      ['lint', 'Lint'],
      ...(this.summary?.against ? ([['diff', 'Diff']] as [Tab, string][]) : []),
      ...(this.summary?.flows != null ? ([['flows', 'Flows']] as [Tab, string][]) : []),
    ];
    for (const [tab, title] of tabs)
      this.tabs.append(
        el(
          'button',
          {
            type: 'button',
            role: 'tab',
            'aria-selected': String(tab === this.tab),
            'data-tab': tab,
            onclick: () => this.select(tab),
          },
          title,
        ),
      );
  }

  private view(): { root: HTMLElement; reload(): Promise<void> } {
    return { heatmap: this.heatmap, graph: this.graph, lint: this.lint, diff: this.diff, flows: this.flows }[
      this.tab
    ];
  }

  private select(tab: Tab): void {
    this.tab = tab;
    this.renderTabs();
    clear(this.main);
    this.main.append(this.view().root);
    void this.refresh();
  }

  private async refresh(): Promise<void> {
    try {
      await this.view().reload();
      // Tests (and scripts) wait for this: the view shows this snapshot of the input.
      document.body.dataset.shown = String(this.shownVersion);
      // For the benchmark's timeline (and devtools): when the first view was shown, and the
      // frame that draws it began.
      if (performance.getEntriesByName('palisade:shown').length === 0) {
        performance.mark('palisade:shown');
        requestAnimationFrame(() => performance.mark('palisade:frame'));
      }
    } catch (error) {
      this.status(`${this.tab}: ${(error as Error).message}`);
    }
  }

  private filter(): void {
    if (this.tab === 'heatmap') this.heatmap.filter();
    else if (this.tab === 'graph') this.graph.filter();
    else if (this.tab === 'lint') this.lint.render();
    else if (this.tab === 'flows') this.flows.filter();
    else this.diff.render();
  }

  /** The server's event stream: a new snapshot of the input → reload what is shown. */
  private listen(): void {
    const events = new EventSource('/api/events');
    events.addEventListener('open', () => (this.live.textContent = 'live'));
    events.addEventListener('error', () => (this.live.textContent = 'reconnecting…'));
    events.addEventListener('snapshot', (event) => {
      const { version } = JSON.parse((event as MessageEvent<string>).data) as VersionEvent;
      if (version === this.shownVersion) return;
      void this.loadSummary().then(() => {
        this.status(`input changed: snapshot ${version}`);
        return this.refresh();
      });
    });
    // New observed flows: the views that show them are drawn again (the others are not).
    events.addEventListener('flows', (event) => {
      const { version } = JSON.parse((event as MessageEvent<string>).data) as VersionEvent;
      const shown =
        this.tab === 'flows'
          ? this.refresh()
          : this.tab === 'graph'
            ? this.graph.reloadObserved()
            : undefined;
      void shown
        ?.then(() => {
          // Tests wait for this: the view shows these flows.
          document.body.dataset.flows = String(version);
          this.status(`flows changed: ${version}`);
        })
        .catch((error: Error) => this.status(`flows: ${error.message}`));
    });
  }

  private status(text: string): void {
    this.statusLine.textContent = text;
  }
}

void new App().start();
