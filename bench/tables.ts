/**
 * The current tables of docs/BENCHMARKS.md as data, so `node scripts/bench-tables.mjs` can
 * regenerate their figures. A row that a benchmark fills carries its figure's stable id in an
 * HTML comment (`<!-- fig:classifier.random-pairs -->`) and its exact command in the command
 * cell (`npm run bench -- classifier`); the benchmark reports a record with that id
 * (bench/report.ts). Rewriting touches only the value and measured cells of those rows; a record
 * whose id no row carries, or a row whose command ran without reporting its id, is an error —
 * so a renamed figure cannot silently leave a stale number behind.
 */

/** One figure as a benchmark reports it (the fields of bench/report.ts's Figure used here). */
export interface FigureRecord {
  readonly id: string;
  readonly value: number;
  readonly unit: string;
  /** One-minute load average when the figure was taken. */
  readonly load?: number;
}

/** A row the script can regenerate: its id and the command that produces it. */
export interface RegenerableRow {
  readonly id: string;
  /** What follows `npm run bench --`, e.g. `lint --scale 0.1 --runs 3`. */
  readonly command: string;
  /** The benchmark's name: the command's first word. */
  readonly bench: string;
}

const ID = /<!--\s*fig:([a-z0-9][a-z0-9.\-×]*)\s*-->/;
const COMMAND = /`npm run bench -- ([^`]+)`/;

/** Cells of a markdown table line, without the outer pipes, trimmed. */
function cellsOf(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

const isTableLine = (line: string): boolean => line.trim().startsWith('|');

/** Every table of the text: its header's column names (lowercased) and the line numbers of its rows. */
function tablesOf(lines: readonly string[]): { columns: string[]; rows: number[] }[] {
  const tables: { columns: string[]; rows: number[] }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!isTableLine(lines[i] as string) || (i > 0 && isTableLine(lines[i - 1] as string))) continue;
    const columns = cellsOf(lines[i] as string).map((c) => c.toLowerCase());
    const rows: number[] = [];
    for (let j = i + 2; j < lines.length && isTableLine(lines[j] as string); j++) rows.push(j);
    tables.push({ columns, rows });
  }
  return tables;
}

/** The rows that carry an id and a bench command, in document order. Throws on a repeated id. */
export function regenerableRows(markdown: string): RegenerableRow[] {
  const found: RegenerableRow[] = [];
  const seen = new Set<string>();
  for (const line of markdown.split('\n')) {
    if (!isTableLine(line)) continue;
    const id = ID.exec(line)?.[1];
    if (!id) continue;
    if (seen.has(id)) throw new Error(`figure id ${id} is on more than one row`);
    seen.add(id);
    const command = COMMAND.exec(line)?.[1]?.trim();
    if (!command) continue;
    found.push({ id, command, bench: command.split(/\s+/)[0] as string });
  }
  return found;
}

/** A figure as the tables print it: three significant digits at most, thousands separated. */
export function formatValue(value: number, unit: string): string {
  const abs = Math.abs(value);
  // Below 1, three significant digits (0.0543 ms, not 0.05).
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 || abs === 0 ? 2 : 2 - Math.floor(Math.log10(abs));
  const text = value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
  return unit ? `${text} ${unit}` : text;
}

/** Units a target may be written in, as a factor onto one base per kind. */
const UNITS: Record<string, { kind: string; factor: number }> = {
  ms: { kind: 'time', factor: 1e-3 },
  s: { kind: 'time', factor: 1 },
  MiB: { kind: 'bytes', factor: 2 ** 20 },
  MB: { kind: 'bytes', factor: 1e6 },
  GiB: { kind: 'bytes', factor: 2 ** 30 },
  GB: { kind: 'bytes', factor: 1e9 },
  'M/s': { kind: 'rate', factor: 1e6 },
  'k/s': { kind: 'rate', factor: 1e3 },
  '/s': { kind: 'rate', factor: 1 },
  'events/s': { kind: 'rate', factor: 1 },
};

/**
 * Whether a value meets its target, or undefined when that cannot be read off the target. The
 * target's clauses (split at `, ` and `; `, parentheses left out) that are one bound — `≤ 10 s`,
 * `≥ 10 M/s`, `≥ 5,000/s` — in a unit of the value's kind are the ones that apply; exactly one
 * must ("≤ 6 s, ≤ 1.5 GB" judges a time by its first clause, "median ≤ 1 ms, p99 ≤ 20 ms" nothing).
 */
export function meetsTarget(value: number, unit: string, target: string): boolean | undefined {
  const have = UNITS[unit];
  if (!have) return undefined;
  const bounds = target
    .replace(/\([^)]*\)/g, '')
    .split(/[,;]\s/) // a clause ends at a comma and a space; 5,000 is one number
    .map((clause) => /^(≤|≥)\s*([\d,.]+)\s*(\S*)$/.exec(clause.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map(([, bound, number, targetUnit]) => ({
      bound,
      number: number as string,
      want: UNITS[targetUnit || unit],
    }))
    .filter(({ want }) => want?.kind === have.kind);
  if (bounds.length !== 1) return undefined;
  const { bound, number, want } = bounds[0] as (typeof bounds)[number];
  const actual = value * have.factor;
  const limit = Number(number.replace(/,/g, '')) * (want?.factor ?? 1);
  return bound === '≤' ? actual <= limit : actual >= limit;
}

export interface RewriteOptions {
  /** The date written in the measured column, `YYYY-MM-DD`. */
  readonly date: string;
  /** Ids whose commands were run: each must have a record (a figure that went missing is an error). */
  readonly expected?: readonly string[];
}

/**
 * The markdown with each record's row given its new value and measured cells. The value cell
 * becomes the value, followed by `— met` / `— **not met**` when the row's target is one bound
 * of a comparable unit; the measured cell `date, load L`. Throws on a record whose id no row
 * carries, a row without value or measured columns, or an expected id without a record.
 */
export function rewriteTables(
  markdown: string,
  records: readonly FigureRecord[],
  options: RewriteOptions,
): string {
  const lines = markdown.split('\n');
  const rowOf = new Map<string, { line: number; columns: string[] }>();
  for (const table of tablesOf(lines))
    for (const row of table.rows) {
      const id = ID.exec(lines[row] as string)?.[1];
      if (id) rowOf.set(id, { line: row, columns: table.columns });
    }
  const byId = new Map(records.map((r) => [r.id, r]));
  for (const id of options.expected ?? [])
    if (!byId.has(id))
      throw new Error(`no figure reported for ${id}: its command ran but did not report that id`);
  for (const record of records) {
    const row = rowOf.get(record.id);
    if (!row)
      throw new Error(`unknown figure id ${record.id}: no table row carries <!-- fig:${record.id} -->`);
    const cells = cellsOf(lines[row.line] as string);
    const valueAt = row.columns.indexOf('value');
    const measuredAt = row.columns.indexOf('measured');
    if (valueAt < 0 || measuredAt < 0)
      throw new Error(`the table of ${record.id} has no "value" or "measured" column`);
    const targetAt = row.columns.indexOf('target');
    const verdict = targetAt < 0 ? undefined : meetsTarget(record.value, record.unit, cells[targetAt] ?? '');
    cells[valueAt] =
      formatValue(record.value, record.unit) +
      (verdict === undefined ? '' : verdict ? ' — met' : ' — **not met**');
    cells[measuredAt] =
      `${options.date}${record.load === undefined ? '' : `, load ${record.load.toFixed(1)}`}`;
    lines[row.line] = `| ${cells.join(' | ')} |`;
  }
  return lines.join('\n');
}
