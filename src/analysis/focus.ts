/**
 * `matrix --focus ns/name`: one workload (or pod) and its peers — the rows it may connect to or
 * be connected from, on some port (some queried port) — as a matrix of those rows alone, printed
 * by every format as any matrix is. Finding the peers costs a row and a column of the matrix, not
 * the matrix.
 */
import { isNoPorts } from '../semantics/index.ts';
import type { Matrix } from './types.ts';

/** Whether anything from row a reaches row b: a queried port, a port, some pod pairs, some family. */
export function connects(matrix: Matrix, a: number, b: number): boolean {
  if (matrix.queries.length > 0) {
    for (let q = 0; q < matrix.queries.length; q++) {
      if (matrix.allowed(a, b, q) || matrix.partial?.(a, b, q) !== undefined) return true;
      for (const family of [4, 6] as const) if (matrix.overFamily?.(a, b, q, family) === true) return true;
    }
    return false;
  }
  if (!isNoPorts(matrix.ports(a, b)) || matrix.partialPorts?.(a, b)) return true;
  for (const family of [4, 6] as const) {
    const ports = matrix.portsOverFamily?.(a, b, family);
    if (ports && !isNoPorts(ports)) return true;
  }
  return false;
}

/** The focused rows and their peers, in row order. */
export function focusRows(matrix: Matrix, focus: ReadonlySet<number>): number[] {
  const rows = new Set<number>(focus);
  const n = matrix.rows.length;
  for (const f of focus) {
    const targets = matrix.reachedRows ? matrix.reachedRows(f) : [...Array(n).keys()];
    for (const t of targets) if (connects(matrix, f, t)) rows.add(t);
    for (let t = 0; t < n; t++) if (!rows.has(t) && connects(matrix, t, f)) rows.add(t);
  }
  return [...rows].sort((x, y) => x - y);
}

/** The matrix of some of the rows (and the same columns), answering from the whole one. */
export function restrictMatrix(matrix: Matrix, rows: readonly number[]): Matrix {
  const at = (i: number): number => rows[i] as number;
  const position = new Map(rows.map((row, i) => [row, i]));
  const partial = matrix.partial?.bind(matrix);
  const partialPorts = matrix.partialPorts?.bind(matrix);
  const reachedRows = matrix.reachedRows?.bind(matrix);
  const { overFamily, portsOverFamily } = matrix;
  return {
    endpoints: rows.map((r) => matrix.endpoints[r] as (typeof matrix.endpoints)[number]),
    rows: rows.map((r) => matrix.rows[r] as (typeof matrix.rows)[number]),
    queries: matrix.queries,
    allowed: (from, to, q) => matrix.allowed(at(from), at(to), q),
    ports: (from, to) => matrix.ports(at(from), at(to)),
    ...(partial && { partial: (from: number, to: number, q: number) => partial(at(from), at(to), q) }),
    ...(partialPorts && { partialPorts: (from: number, to: number) => partialPorts(at(from), at(to)) }),
    ...(overFamily && {
      overFamily: (from: number, to: number, q: number, family: 4 | 6) =>
        overFamily(at(from), at(to), q, family),
    }),
    ...(portsOverFamily && {
      portsOverFamily: (from: number, to: number, family: 4 | 6) => portsOverFamily(at(from), at(to), family),
    }),
    ...(reachedRows && {
      reachedRows: (from: number) =>
        reachedRows(at(from)).flatMap((r) => {
          const i = position.get(r);
          return i === undefined ? [] : [i];
        }),
    }),
    stats: matrix.stats,
  };
}
