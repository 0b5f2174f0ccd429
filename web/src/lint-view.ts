/**
 * Lint findings and the input's diagnostics (what `palisade lint` reports), each linked to the
 * object it is about; filtered by the search text.
 */
import { api, type LintAnswer } from './api.ts';
import { append, clear, count, el } from './dom.ts';
import type { ExplainPanel } from './explain.ts';
import { policyObjects } from './policy-object.ts';

export class LintView {
  readonly root = el('section', { class: 'lint', 'aria-label': 'lint findings' });
  private report: LintAnswer | undefined;

  constructor(
    private readonly details: ExplainPanel,
    private readonly search: () => string,
  ) {}

  async reload(): Promise<void> {
    this.report = await api('/api/lint');
    this.render();
  }

  render(): void {
    const report = this.report;
    clear(this.root);
    if (!report) return;
    const text = this.search().trim().toLowerCase();
    const shown = report.findings.filter(
      (f) => !text || `${f.code} ${f.object ?? ''} ${f.message} ${f.file}`.toLowerCase().includes(text),
    );
    const { error, warning, info } = report.summary;
    append(
      this.root,
      el(
        'p',
        { class: 'caption' },
        `${count(error)} errors, ${count(warning)} warnings, ${count(info)} infos` +
          (text ? `; ${count(shown.length)} match "${this.search().trim()}"` : ''),
      ),
      el(
        'table',
        { class: 'findings' },
        el(
          'thead',
          {},
          el('tr', {}, ...['severity', 'code', 'object', 'where', 'what', 'fix'].map((h) => el('th', {}, h))),
        ),
        el(
          'tbody',
          {},
          ...shown.slice(0, 2000).map((f) =>
            el(
              'tr',
              { class: f.severity },
              el('td', {}, f.severity),
              el('td', { class: 'code' }, f.code),
              // `Kind ns/name` as is; a short name (`ccnp/x` in POLICY_ENGINES_MIXED) as explanations map it.
              el(
                'td',
                {},
                f.object
                  ? this.details.link(f.object, f.object.includes(' ') ? [f.object] : policyObjects(f.object))
                  : '',
              ),
              el(
                'td',
                { class: 'location' },
                f.line ? `${f.file}:${f.line}:${f.column}` : f.file,
                f.path ? ` ${f.path}` : '',
              ),
              el('td', {}, f.message),
              el('td', { class: 'hint' }, f.hint),
            ),
          ),
        ),
      ),
      shown.length > 2000
        ? el('p', {}, `… and ${count(shown.length - 2000)} more (GET /api/lint has them all)`)
        : null,
      ...report.skipped.map((s) => el('p', { class: 'skipped' }, `${s.check} not run: ${s.reason}`)),
    );
  }
}
