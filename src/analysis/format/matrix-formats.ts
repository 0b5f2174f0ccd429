/**
 * Matrix output formats, one writer each, registered by name. Writers stream (a 2,000-pod
 * matrix has four million cells) through `write`.
 */
import { PROTOCOLS } from '../../model/types.ts';
import { formatPortSet, isNoPorts, type PortSet } from '../../semantics/index.ts';
import type { Matrix } from '../types.ts';
import type { Style } from './style.ts';

export type MatrixWriter = (matrix: Matrix, write: (chunk: string) => void, style: Style) => void;

const queryLabel = (matrix: Matrix, q: number): string => {
  const query = matrix.queries[q];
  return query ? `${query.protocol}/${query.port}` : '';
};

const text: MatrixWriter = (matrix, write, style) => {
  const ids = matrix.endpoints.map((e) => e.id);
  if (matrix.queries.length === 0) {
    let connected = 0;
    portSetLines(matrix, (from, to, ports) => {
      if (isNoPorts(ports)) return;
      connected++;
      write(`${from} → ${to}: ${formatPortSet(ports)}\n`);
    });
    const pairs = ids.length * ids.length;
    write(
      style.dim(
        `\n${connected} of ${pairs} ordered pairs (self pairs included) can connect; the others are denied on every port\n`,
      ),
    );
    return;
  }
  const width = ids.reduce((widest, id) => Math.max(widest, id.length), 4);
  matrix.queries.forEach((_, q) => {
    if (q > 0) write('\n');
    write(
      `${queryLabel(matrix, q).padEnd(width)}  ${ids.map((_, i) => String(i + 1).padStart(3)).join('')}\n`,
    );
    ids.forEach((id, from) => {
      const cells = ids
        .map((__, to) => (matrix.allowed(from, to, q) ? style.ok('  .') : style.bad('  X')))
        .join('');
      write(`${id.padEnd(width)}  ${cells}  ${style.dim(String(from + 1))}\n`);
    });
  });
  write(style.dim(`\n. allowed  X denied; rows are sources, columns destinations (numbered as the rows)\n`));
};

const json: MatrixWriter = (matrix, write) => {
  write('{"results":[');
  let first = true;
  const emit = (entry: object): void => {
    write((first ? '\n' : ',\n') + JSON.stringify(entry));
    first = false;
  };
  const ids = matrix.endpoints.map((e) => e.id);
  if (matrix.queries.length === 0) {
    portSetLines(matrix, (from, to, ports) =>
      emit({ from, to, allowed: !isNoPorts(ports), ports: portsJson(ports) }),
    );
  } else {
    ids.forEach((from, f) =>
      ids.forEach((to, t) =>
        matrix.queries.forEach((query, q) =>
          emit({ from, to, port: query.port, protocol: query.protocol, allowed: matrix.allowed(f, t, q) }),
        ),
      ),
    );
  }
  write('\n]}\n');
};

const csv: MatrixWriter = (matrix, write) => {
  const ids = matrix.endpoints.map((e) => e.id);
  if (matrix.queries.length === 0) {
    write('from,to,ports\n');
    portSetLines(matrix, (from, to, ports) => write(`${from},${to},"${formatPortSet(ports)}"\n`));
    return;
  }
  write('from,to,port,protocol,allowed\n');
  ids.forEach((from, f) =>
    ids.forEach((to, t) =>
      matrix.queries.forEach((query, q) =>
        write(`${from},${to},${query.port},${query.protocol},${matrix.allowed(f, t, q)}\n`),
      ),
    ),
  );
};

const md: MatrixWriter = (matrix, write) => {
  const ids = matrix.endpoints.map((e) => e.id);
  if (matrix.queries.length === 0) {
    write('| from | to | allowed ports |\n|---|---|---|\n');
    portSetLines(matrix, (from, to, ports) => write(`| ${from} | ${to} | ${formatPortSet(ports)} |\n`));
    return;
  }
  matrix.queries.forEach((_, q) => {
    if (q > 0) write('\n');
    write(`| ${queryLabel(matrix, q)} | ${ids.join(' | ')} |\n|---|${ids.map(() => ':-:').join('|')}|\n`);
    ids.forEach((from, f) =>
      write(`| ${from} | ${ids.map((__, t) => (matrix.allowed(f, t, q) ? '✓' : '✗')).join(' | ')} |\n`),
    );
  });
};

function portSetLines(matrix: Matrix, visit: (from: string, to: string, ports: PortSet) => void): void {
  const ids = matrix.endpoints.map((e) => e.id);
  ids.forEach((from, f) => ids.forEach((to, t) => visit(from, to, matrix.ports(f, t))));
}

function portsJson(ports: PortSet): Record<string, [number, number][]> {
  const result: Record<string, [number, number][]> = {};
  for (const p of PROTOCOLS) if (ports.ranges[p].length) result[p] = ports.ranges[p].map(([a, b]) => [a, b]);
  return result;
}

export const MATRIX_FORMATS: Readonly<Record<string, MatrixWriter>> = { text, json, csv, md };
