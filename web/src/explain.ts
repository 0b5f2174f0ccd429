/**
 * The details panel: why a connection is allowed or denied (what `palisade check` says: each
 * direction's tier walk, the rules that matched and those that missed, with why), every policy
 * named as a link to its source (file, line, and the object as read).
 */
import { api, type CheckAnswer, type RuleNote, type ServedFlow, type SideAnswer } from './api.ts';
import { clear, el } from './dom.ts';
import { policyObjects } from './policy-object.ts';

export class ExplainPanel {
  readonly root = el('aside', { class: 'details', 'aria-label': 'details', hidden: true });

  constructor(private readonly ports: () => readonly string[]) {}

  close(): void {
    this.root.hidden = true;
    clear(this.root);
  }

  private open(...children: (Node | string | undefined)[]): void {
    clear(this.root);
    this.root.append(
      el(
        'button',
        { type: 'button', class: 'close', 'aria-label': 'close', onclick: () => this.close() },
        '×',
      ),
      ...children.filter((c): c is Node | string => c !== undefined),
    );
    this.root.hidden = false;
  }

  /**
   * Why, in one click on a heatmap cell or an arrow: one pod pair the cell stands for (an allowed
   * one when there is one) on the port shown — or, on any port, one the pair may use.
   */
  async why(level: 'namespace' | 'workload' | 'pod', from: string, to: string, port: string): Promise<void> {
    this.open(el('h2', {}, `${from} → ${to}`), el('p', {}, 'asking…'));
    try {
      const answer = await api('/api/why', { level, from, to, port });
      this.showAnswer(
        answer,
        level === 'pod'
          ? undefined
          : `One pod pair of ${from} → ${to}${answer.verdict.allowed ? ' that may connect' : ''}:`,
      );
    } catch (error) {
      this.open(el('h2', {}, `${from} → ${to}`), el('p', { class: 'error' }, (error as Error).message));
    }
  }

  /** Why `from` may or may not reach `to` on `port` (`80/TCP`); `any` asks for a port first. */
  async explain(from: string, to: string, port: string): Promise<void> {
    if (port === 'any') {
      this.open(
        el('h2', {}, `${from} → ${to}`),
        el('p', {}, 'The heatmap shows whether any port is allowed. Pick a port to see why:'),
        el(
          'p',
          { class: 'ports' },
          ...this.ports().map((p) =>
            el('button', { type: 'button', onclick: () => void this.explain(from, to, p) }, p),
          ),
        ),
      );
      return;
    }
    const [number, protocol] = port.split('/');
    this.open(el('h2', {}, `${from} → ${to}`), el('p', {}, 'asking…'));
    try {
      const answer = await api('/api/check', {
        from,
        to,
        port: number,
        protocol: protocol ?? 'TCP',
      });
      this.showAnswer(answer);
    } catch (error) {
      this.open(el('h2', {}, `${from} → ${to}`), el('p', { class: 'error' }, (error as Error).message));
    }
  }

  /**
   * Why for an observed flow: what the datapath did and which rule the agent named, then the same
   * explanation `check` (and a click on an arrow) gives for its connection — and, where serve's
   * own answer names another rule, that first.
   */
  async flow(flow: ServedFlow): Promise<void> {
    const from = flow.src.pod ?? flow.src.ip;
    const to = flow.dst.pod ?? flow.dst.ip;
    const observed = el(
      'div',
      { class: 'observed' },
      el(
        'p',
        { class: `verdict ${flow.verdict}` },
        `Observed: ${flow.verdict.toUpperCase()} ×${flow.count}${flow.sampled ? ' (sampled)' : ''}${flow.node !== undefined ? ` on ${flow.node}` : ''}`,
      ),
      el('p', { class: 'decided' }, flow.decidedText),
      flow.staged
        ? el(
            'p',
            { class: `staged ${flow.staged.verdict}` },
            `Staged: would be ${flow.staged.verdict}${flow.stagedText ? ` (${flow.stagedText})` : ''}`,
          )
        : null,
      flow.mismatch !== undefined
        ? el('p', { class: 'warning' }, `⚠ the agent's kernel and evaluator differ: ${flow.mismatch}`)
        : null,
      flow.disagreement !== undefined
        ? el('p', { class: 'warning disagreement' }, `⚠ serve disagrees: ${flow.disagreement}`)
        : null,
      el('p', { class: 'context' }, "What serve's input says about this connection:"),
    );
    const title = `${from} → ${to} ${flow.protocol}/${flow.port}`;
    if (!flow.check) {
      this.open(el('h2', {}, title), observed);
      return;
    }
    this.open(el('h2', {}, title), observed, el('p', {}, 'asking…'));
    try {
      const answer = await api('/api/check', { ...flow.check });
      this.showAnswer(answer, observed);
    } catch (error) {
      this.open(el('h2', {}, title), observed, el('p', { class: 'error' }, (error as Error).message));
    }
  }

  private showAnswer(answer: CheckAnswer, context?: string | HTMLElement): void {
    const { verdict } = answer;
    const port = `${answer.protocol}/${answer.port}${answer.portName ? ` (${answer.portName})` : ''}`;
    const directions = [verdict.egress, verdict.ingress];
    this.open(
      typeof context === 'string' ? el('p', { class: 'context' }, context) : context,
      el('h2', {}, `${answer.from} → ${answer.to}`),
      el(
        'p',
        { class: `verdict ${verdict.allowed ? 'allowed' : 'denied'}` },
        `${verdict.allowed ? 'ALLOWED' : 'DENIED'} on ${port}`,
      ),
      ...directions.map((d) => this.direction(d)),
      el('details', {}, el('summary', {}, 'as palisade check prints it'), el('pre', {}, answer.text)),
    );
  }

  private direction(d: SideAnswer): HTMLElement {
    const rule = (note: RuleNote): HTMLElement =>
      el(
        'li',
        {},
        this.link(note.policy),
        note.rule >= 0 ? ` ${d.direction === 'egress' ? 'egress' : 'ingress'}[${note.rule}]` : '',
        note.reason ? `: ${note.reason}` : '',
      );
    return el(
      'section',
      { class: `direction ${d.allowed ? 'allowed' : 'denied'}` },
      el(
        'h3',
        {},
        // A side outside the cluster (an address) has no endpoint whose policies decide it.
        `${d.direction}${d.endpoint !== undefined ? ` of ${d.endpoint}` : ''}: ${d.allowed ? 'allowed' : 'denied'}`,
      ),
      el('p', {}, d.reason),
      d.walk?.length
        ? el(
            'ol',
            { class: 'walk' },
            ...d.walk.map((step) =>
              el(
                'li',
                {},
                `${step.shownAs ?? step.tier}: ${step.outcome}`,
                ...step.policies.flatMap((p) => [' ', this.link(p)]),
              ),
            ),
          )
        : null,
      d.matches.length ? el('p', {}, 'Rules that match:') : null,
      d.matches.length ? el('ul', {}, ...d.matches.map(rule)) : null,
      d.misses.length ? el('p', {}, 'Rules that do not:') : null,
      d.misses.length ? el('ul', {}, ...d.misses.map(rule)) : null,
    );
  }

  /**
   * A policy's name as a button that shows where it is written: the first of the objects it can
   * be (`policyObjects`) that the input has.
   */
  link(policy: string, objects = policyObjects(policy)): HTMLElement {
    return el(
      'button',
      { type: 'button', class: 'link object', onclick: () => void this.source(objects) },
      policy,
    );
  }

  async source(objects: readonly string[]): Promise<void> {
    let failure: Error | undefined;
    for (const object of objects) {
      try {
        const found = await api('/api/object', { name: object });
        this.open(
          el('h2', {}, found.object),
          el('p', { class: 'location' }, `${found.file}:${found.line}:${found.column}`),
          el('pre', { class: 'yaml' }, found.yaml),
        );
        return;
      } catch (error) {
        failure ??= error as Error;
      }
    }
    this.open(el('h2', {}, objects[0] ?? ''), el('p', { class: 'error' }, failure?.message ?? 'no object'));
  }
}
