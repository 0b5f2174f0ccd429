/**
 * Matrix output formats, one writer each, registered by name. A writer yields its output in
 * pieces as it produces them — a line, a row — and never holds the whole: a 10,000-endpoint
 * matrix is 100 million cells, more than any string or memory budget. The caller decides how
 * pieces reach the output (the CLI batches them and waits while the pipe is full).
 */
import { PROTOCOLS } from '../../model/types.ts';
import { formatPortSet, isNoPorts, type PortSet } from '../../semantics/index.ts';
import type { Matrix, MatrixRow } from '../types.ts';
import type { Style } from './style.ts';

export type MatrixWriter = (matrix: Matrix, style: Style) => Iterable<string>;

const queryLabel = (matrix: Matrix, q: number): string => {
  const query = matrix.queries[q];
  return query ? `${query.protocol}/${query.port}` : '';
};

/** Characters per line of the text table of these rows (labels, three per cell, the row number). */
export function textTableWidth(rows: readonly MatrixRow[]): number {
  const n = rows.length;
  return labelWidth(rows) + 2 + 3 * n + 2 + String(n).length;
}

function labelWidth(rows: readonly MatrixRow[]): number {
  return rows.reduce((widest, r) => Math.max(widest, r.label.length), 4);
}

function* text(matrix: Matrix, style: Style): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  if (matrix.queries.length === 0) {
    let connected = 0;
    for (const [from, to, ports, f, t] of portSetLines(matrix)) {
      const partial = matrix.partialPorts?.(f, t);
      if (isNoPorts(ports) && !partial) continue;
      connected++;
      const every = isNoPorts(ports) ? 'none for every pod pair' : formatPortSet(ports);
      const some = partial ? `; ${formatPortSet(partial.ports)} for ${partial.where}` : '';
      yield `${from} → ${to}: ${every}${some}\n`;
    }
    const pairs = ids.length * ids.length;
    yield style.dim(
      `\n${connected} of ${pairs} ordered pairs (self pairs included) can connect; the others are denied on every port\n`,
    );
    return;
  }
  const width = labelWidth(matrix.rows);
  const allowed = style.ok('  .');
  const denied = style.bad('  X');
  const partial = style.warn('  ~');
  let anyPartial = false;
  const header = ids.map((_, i) => String(i + 1).padStart(3)).join('');
  for (let q = 0; q < matrix.queries.length; q++) {
    if (q > 0) yield '\n';
    yield `${queryLabel(matrix, q).padEnd(width)}  ${header}\n`;
    for (let from = 0; from < ids.length; from++) {
      let cells = '';
      for (let to = 0; to < ids.length; to++) {
        if (matrix.allowed(from, to, q)) cells += allowed;
        else if (matrix.partial?.(from, to, q) === undefined) cells += denied;
        else {
          cells += partial;
          anyPartial = true;
        }
      }
      yield `${(ids[from] as string).padEnd(width)}  ${cells}  ${style.dim(String(from + 1))}\n`;
    }
  }
  const partialLegend = anyPartial ? '  ~ some pod pairs only' : '';
  yield style.dim(
    `\n. allowed  X denied${partialLegend}; rows are sources, columns destinations (numbered as the rows)\n`,
  );
}

function* json(matrix: Matrix): Iterable<string> {
  yield '{"results":[';
  let separator = '\n';
  if (matrix.queries.length === 0) {
    for (const [, , ports, f, t] of portSetLines(matrix)) {
      const from = matrix.rows[f] as MatrixRow;
      const to = matrix.rows[t] as MatrixRow;
      const partial = matrix.partialPorts?.(f, t);
      yield (
        separator +
        JSON.stringify({
          from: from.id,
          to: to.id,
          allowed: !isNoPorts(ports),
          ports: portsJson(ports),
          ...(partial ? { partialPorts: portsJson(partial.ports), partial: partial.where } : {}),
          fromKind: from.kind,
          toKind: to.kind,
        })
      );
      separator = ',\n';
    }
  } else {
    // One row of sources at a time: the ids are quoted once, not once per cell. `from` and `to`
    // are `ns/name` (the contract); the kinds say what each names.
    const ids = matrix.rows.map((r) => JSON.stringify(r.id));
    const kinds = matrix.rows.map((r) => JSON.stringify(r.kind));
    const columns = matrix.queries.map(
      (query) =>
        `,"port":${JSON.stringify(query.port)},"protocol":${JSON.stringify(query.protocol)},"allowed":`,
    );
    for (let f = 0; f < ids.length; f++) {
      let row = '';
      const from = `{"from":${ids[f] as string},"to":`;
      const fromKind = `,"fromKind":${kinds[f] as string},"toKind":`;
      for (let t = 0; t < ids.length; t++)
        for (let q = 0; q < columns.length; q++) {
          const partial = matrix.partial?.(f, t, q);
          const partialField = partial === undefined ? '' : `,"partial":${JSON.stringify(partial)}`;
          row += `${separator}${from}${ids[t] as string}${columns[q] as string}${matrix.allowed(f, t, q)}${partialField}${fromKind}${kinds[t] as string}}`;
          separator = ',\n';
        }
      yield row;
    }
  }
  yield '\n]}\n';
}

function* csv(matrix: Matrix): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  if (matrix.queries.length === 0) {
    yield 'from,to,ports\n';
    for (const [from, to, ports] of portSetLines(matrix)) yield `${from},${to},"${formatPortSet(ports)}"\n`;
    return;
  }
  yield 'from,to,port,protocol,allowed\n';
  for (let f = 0; f < ids.length; f++) {
    let row = '';
    for (let t = 0; t < ids.length; t++)
      matrix.queries.forEach((query, q) => {
        row += `${ids[f] as string},${ids[t] as string},${query.port},${query.protocol},${matrix.allowed(f, t, q)}\n`;
      });
    yield row;
  }
}

function* md(matrix: Matrix): Iterable<string> {
  const ids = matrix.rows.map((r) => r.label);
  if (matrix.queries.length === 0) {
    yield '| from | to | allowed ports |\n|---|---|---|\n';
    for (const [from, to, ports] of portSetLines(matrix))
      yield `| ${from} | ${to} | ${formatPortSet(ports)} |\n`;
    return;
  }
  for (let q = 0; q < matrix.queries.length; q++) {
    if (q > 0) yield '\n';
    yield `| ${queryLabel(matrix, q)} | ${ids.join(' | ')} |\n|---|${ids.map(() => ':-:').join('|')}|\n`;
    for (let f = 0; f < ids.length; f++) {
      let cells = '';
      for (let t = 0; t < ids.length; t++) cells += matrix.allowed(f, t, q) ? ' ✓ |' : ' ✗ |';
      yield `| ${ids[f] as string} |${cells}\n`;
    }
  }
}

/** Every ordered pair's allowed ports, with the rows' labels and indexes. */
function* portSetLines(matrix: Matrix): Iterable<[string, string, PortSet, number, number]> {
  const ids = matrix.rows.map((r) => r.label);
  for (let f = 0; f < ids.length; f++)
    for (let t = 0; t < ids.length; t++) yield [ids[f] as string, ids[t] as string, matrix.ports(f, t), f, t];
}

function portsJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}

export const MATRIX_FORMATS: Readonly<Record<string, MatrixWriter>> = { text, json, csv, md };
