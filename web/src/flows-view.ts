/**
 * Observed flows (`palisade serve --flows FILE`, `--agent`, `--lab`): a table of what the
 * datapaths saw — verdict, source, destination, port, count, node, and the rule that decided
 * each side in `check`'s words — filtered by verdict, by the search text, or to what the staged
 * policies would break or open (the judgement of `palisade flows --staged`). Clicking a flow
 * explains its connection as an arrow of the graph is explained; a flow whose deciding rule
 * serve's own answer does not give says so in its row.
 */
import { api, type FlowsAnswer, type ServedFlow } from './api.ts';
import { append, clear, count, el } from './dom.ts';
import type { ExplainPanel } from './explain.ts';

const endpointText = (end: { ip: string; pod?: string }): string => end.pod ?? end.ip;

/** Rows asked for and drawn at most (the first: denied, then the most connections); the caption says so. */
const MAX_ROWS = 1000;

export class FlowsView {
  readonly root = el('section', { class: 'flows', 'aria-label': 'observed flows' });
  private readonly verdict = el(
    'select',
    { name: 'flow-verdict', 'aria-label': 'verdict' },
    el('option', { value: '' }, 'every verdict'),
    el('option', { value: 'allowed' }, 'allowed'),
    el('option', { value: 'denied' }, 'denied'),
  );
  private readonly staged = el('input', { type: 'checkbox', name: 'flow-staged' });
  private readonly caption = el('p', { class: 'caption' });
  private readonly notes = el('div', { class: 'notes' });
  private readonly table = el('div', { class: 'table' });

  constructor(
    private readonly details: ExplainPanel,
    private readonly search: () => string,
  ) {
    this.root.append(
      el(
        'div',
        { class: 'controls' },
        el('label', {}, 'verdict ', this.verdict),
        el(
          'label',
          { title: 'what the staged policies (palisade.dev/staged) would deny or newly allow' },
          this.staged,
          ' staged: what applying the staged policies would break or open',
        ),
      ),
      this.caption,
      this.notes,
      this.table,
    );
    this.verdict.addEventListener('change', () => void this.reload());
    this.staged.addEventListener('change', () => void this.reload());
  }

  /** The search box changed: ask again (the server searches names, addresses and rules). */
  filter(): void {
    void this.reload();
  }

  async reload(): Promise<void> {
    const answer = await api('/api/flows', {
      verdict: this.verdict.value,
      staged: this.staged.checked ? 'true' : undefined,
      q: this.search().trim(),
      limit: String(MAX_ROWS),
    });
    this.render(answer);
  }

  private render(answer: FlowsAnswer): void {
    const staged = this.staged.checked;
    const flows = answer.flows;
    const stagedColumn = staged || flows.some((f) => f.staged !== undefined);
    const connections = flows.reduce((n, f) => n + f.count, 0);
    const more = answer.matched - flows.length;
    this.caption.textContent =
      `${count(answer.matched)} of ${count(answer.total)} flows from ${answer.source}` +
      (staged ? ' that the staged policies would break or open' : '') +
      (more > 0
        ? `; the first ${count(flows.length)} are shown (${count(connections)} connections: narrow them with the verdict or the search)`
        : ` (${count(connections)} connections)`) +
      '. Click a flow to see why.';
    clear(this.notes);
    for (const problem of answer.problems)
      this.notes.append(el('p', { class: 'error' }, `${problem.source}: ${problem.message}`));
    if (answer.diagnostics.length > 0) {
      const first = answer.diagnostics[0];
      this.notes.append(
        el(
          'p',
          { class: 'error' },
          `${count(answer.diagnostics.length)} problems in the flow file (bad lines are skipped)` +
            (first ? `, first: ${first.file}:${first.line}:${first.column}: ${first.message}` : ''),
        ),
      );
    }
    const disagreeing = flows.filter((f) => f.disagreement !== undefined).length;
    if (disagreeing > 0)
      this.notes.append(
        el(
          'p',
          { class: 'warning' },
          `${count(disagreeing)} ${disagreeing === 1 ? 'flow was' : 'flows were'} decided by another rule than serve's input gives (marked ⚠): the manifests read may not be what the agents enforce.`,
        ),
      );
    clear(this.table);
    append(
      this.table,
      el(
        'table',
        { class: 'flow-table' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...[
              'verdict',
              'source',
              'destination',
              'port',
              'count',
              'node',
              'decided by',
              stagedColumn ? 'staged' : '',
            ].map((h) => el('th', {}, h)),
          ),
        ),
        el('tbody', {}, ...flows.map((flow, i) => this.row(flow, i))),
      ),
    );
  }

  private row(flow: ServedFlow, index: number): HTMLElement {
    const note = flow.disagreement ?? flow.mismatch;
    return el(
      'tr',
      {
        class: `flow ${flow.verdict}${flow.disagreement !== undefined ? ' disagrees' : ''}`,
        'data-index': index,
        'data-verdict': flow.verdict,
        tabindex: 0,
        title: 'click: why',
        onclick: () => void this.details.flow(flow),
        onkeydown: (event: Event) => {
          if ((event as KeyboardEvent).key === 'Enter') void this.details.flow(flow);
        },
      },
      el('td', { class: `verdict ${flow.verdict}` }, flow.verdict.toUpperCase()),
      el('td', {}, endpointText(flow.src)),
      el('td', {}, endpointText(flow.dst)),
      el('td', {}, `${flow.protocol}/${flow.port}`),
      el('td', { class: 'number' }, `${count(flow.count)}${flow.sampled ? ' (sampled)' : ''}`),
      el('td', {}, flow.node ?? ''),
      el(
        'td',
        { class: 'rule' },
        flow.decidedText,
        note !== undefined ? el('div', { class: 'warning' }, `⚠ ${note}`) : null,
      ),
      flow.staged
        ? el(
            'td',
            { class: `staged ${flow.staged.verdict}` },
            `would be ${flow.staged.verdict}${flow.stagedText ? ` (${flow.stagedText})` : ''}`,
          )
        : el('td', {}),
    );
  }
}
