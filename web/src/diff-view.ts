/**
 * The diff view (`serve --against OLD`): connections added, removed or changed between the old
 * input and the one shown, with the ports on each side and the changed objects that caused
 * each (what `palisade diff -o json` prints), linked to their sources.
 */
import { api, type DiffAnswer } from './api.ts';
import { append, clear, count, el } from './dom.ts';
import type { ExplainPanel } from './explain.ts';

export class DiffView {
  readonly root = el('section', { class: 'diff', 'aria-label': 'diff' });
  private doc: DiffAnswer | undefined;

  constructor(
    private readonly details: ExplainPanel,
    private readonly search: () => string,
  ) {}

  async reload(): Promise<void> {
    this.doc = await api('/api/diff');
    this.render();
  }

  render(): void {
    clear(this.root);
    const doc = this.doc;
    if (!doc) return;
    const text = this.search().trim().toLowerCase();
    const shown = doc.connections.filter((c) => !text || `${c.from} ${c.to}`.toLowerCase().includes(text));
    const name = (id: string, kind: string): string => (kind === 'Addresses' ? id : `${id}[${kind}]`);
    append(
      this.root,
      el(
        'p',
        { class: 'caption' },
        `${count(doc.summary.added)} added, ${count(doc.summary.removed)} removed, ${count(doc.summary.changed)} changed`,
        ` (from the --against input to the one shown); objects changed: ${count(doc.objects.length)}`,
      ),
      doc.endpoints.added.length || doc.endpoints.removed.length
        ? el(
            'p',
            {},
            ...doc.endpoints.added.map((e) => el('span', { class: 'tag added' }, `+ ${name(e.id, e.kind)}`)),
            ...doc.endpoints.removed.map((e) =>
              el('span', { class: 'tag removed' }, `− ${name(e.id, e.kind)}`),
            ),
          )
        : null,
      el(
        'table',
        { class: 'connections' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['change', 'from', 'to', 'before', 'after', 'because of'].map((h) => el('th', {}, h)),
          ),
        ),
        el(
          'tbody',
          {},
          ...shown
            .slice(0, 2000)
            .map((c) =>
              el(
                'tr',
                { class: c.change, 'data-change': c.change },
                el('td', {}, c.change),
                el('td', {}, name(c.from, c.fromKind)),
                el('td', {}, name(c.to, c.toKind)),
                el('td', {}, c.before || 'nothing'),
                el('td', {}, c.after || 'nothing'),
                el('td', {}, ...c.causes.flatMap((o, i) => [i ? ', ' : '', this.details.link(o, [o])])),
              ),
            ),
        ),
      ),
    );
  }
}
