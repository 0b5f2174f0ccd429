/**
 * Matrix output formats, one writer each, registered by name. A writer yields its output in
 * pieces as it produces them — a line, a row — and never holds the whole: a 10,000-endpoint
 * matrix is 100 million cells, more than any string or memory budget. The caller decides how
 * pieces reach the output (the CLI batches them and waits while the pipe is full).
 */
import { PROTOCOLS, type Endpoint } from '../../model/types.ts';
import { formatPortSet, isNoPorts, type PortSet } from '../../semantics/index.ts';
import type { Matrix } from '../types.ts';
import type { Style } from './style.ts';

export type MatrixWriter = (matrix: Matrix, style: Style) => Iterable<string>;

const queryLabel = (matrix: Matrix, q: number): string => {
  const query = matrix.queries[q];
  return query ? `${query.protocol}/${query.port}` : '';
};

/** Characters per line of the text table of these endpoints (ids, three per cell, the row number). */
export function textTableWidth(endpoints: readonly Endpoint[]): number {
  const n = endpoints.length;
  return idWidth(endpoints) + 2 + 3 * n + 2 + String(n).length;
}

function idWidth(endpoints: readonly Endpoint[]): number {
  return endpoints.reduce((widest, e) => Math.max(widest, e.id.length), 4);
}

function* text(matrix: Matrix, style: Style): Iterable<string> {
  const ids = matrix.endpoints.map((e) => e.id);
  if (matrix.queries.length === 0) {
    let connected = 0;
    for (const [from, to, ports] of portSetLines(matrix)) {
      if (isNoPorts(ports)) continue;
      connected++;
      yield `${from} → ${to}: ${formatPortSet(ports)}\n`;
    }
    const pairs = ids.length * ids.length;
    yield style.dim(
      `\n${connected} of ${pairs} ordered pairs (self pairs included) can connect; the others are denied on every port\n`,
    );
    return;
  }
  const width = idWidth(matrix.endpoints);
  const allowed = style.ok('  .');
  const denied = style.bad('  X');
  const header = ids.map((_, i) => String(i + 1).padStart(3)).join('');
  for (let q = 0; q < matrix.queries.length; q++) {
    if (q > 0) yield '\n';
    yield `${queryLabel(matrix, q).padEnd(width)}  ${header}\n`;
    for (let from = 0; from < ids.length; from++) {
      let cells = '';
      for (let to = 0; to < ids.length; to++) cells += matrix.allowed(from, to, q) ? allowed : denied;
      yield `${(ids[from] as string).padEnd(width)}  ${cells}  ${style.dim(String(from + 1))}\n`;
    }
  }
  yield style.dim(`\n. allowed  X denied; rows are sources, columns destinations (numbered as the rows)\n`);
}

function* json(matrix: Matrix): Iterable<string> {
  yield '{"results":[';
  let separator = '\n';
  if (matrix.queries.length === 0) {
    for (const [from, to, ports] of portSetLines(matrix)) {
      yield separator + JSON.stringify({ from, to, allowed: !isNoPorts(ports), ports: portsJson(ports) });
      separator = ',\n';
    }
  } else {
    // One row of sources at a time: the ids are quoted once, not once per cell.
    const ids = matrix.endpoints.map((e) => JSON.stringify(e.id));
    const columns = matrix.queries.map(
      (query) =>
        `,"port":${JSON.stringify(query.port)},"protocol":${JSON.stringify(query.protocol)},"allowed":`,
    );
    for (let f = 0; f < ids.length; f++) {
      let row = '';
      const from = `{"from":${ids[f] as string},"to":`;
      for (let t = 0; t < ids.length; t++)
        for (let q = 0; q < columns.length; q++) {
          row += `${separator}${from}${ids[t] as string}${columns[q] as string}${matrix.allowed(f, t, q)}}`;
          separator = ',\n';
        }
      yield row;
    }
  }
  yield '\n]}\n';
}

function* csv(matrix: Matrix): Iterable<string> {
  const ids = matrix.endpoints.map((e) => e.id);
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
  const ids = matrix.endpoints.map((e) => e.id);
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

function* portSetLines(matrix: Matrix): Iterable<[string, string, PortSet]> {
  const ids = matrix.endpoints.map((e) => e.id);
  for (let f = 0; f < ids.length; f++)
    for (let t = 0; t < ids.length; t++) yield [ids[f] as string, ids[t] as string, matrix.ports(f, t)];
}

function portsJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}

export const MATRIX_FORMATS: Readonly<Record<string, MatrixWriter>> = { text, json, csv, md };
