/**
 * A matrix narrowed to one row and its peers (`matrix --focus ns/name`): the rows the name
 * names, and every row they can connect to or that can connect to them (on some column, or some
 * port; a partial cell counts), with the cells among those rows as computed. The cells are
 * read, not evaluated again: narrowing costs one pass over the focus rows' lines.
 */
import { isNoPorts } from '../model/port-set.ts';
import type { IpFamily } from '../net/ip.ts';
import type { Matrix } from './types.ts';

/** The narrowed matrix, or a message when no row is called `focus`. */
export function focusMatrix(matrix: Matrix, focus: string): Matrix | string {
  const named = matrix.rows.flatMap((row, i) => (row.id === focus || row.label === focus ? [i] : []));
  if (named.length === 0) {
    const name =
      focus
        .replace(/\[[^\]]*\]$/, '')
        .split('/')
        .pop() ?? focus;
    const near = matrix.rows.filter((row) => row.id.split('/').pop() === name).map((row) => row.label);
    return `--focus: no row is ${focus}${near.length ? ` (did you mean ${near.slice(0, 5).join(', ')}?)` : ''}; rows are named ns/name or ns/name[Kind]`;
  }
  const connects = (a: number, b: number): boolean => {
    if (matrix.queries.length === 0)
      return !isNoPorts(matrix.ports(a, b)) || matrix.partialPorts?.(a, b) !== undefined;
    return matrix.queries.some((_, q) => matrix.allowed(a, b, q) || matrix.partial?.(a, b, q) !== undefined);
  };
  const focused = new Set(named);
  const keep = matrix.rows.flatMap((_, i) =>
    focused.has(i) || named.some((f) => connects(f, i) || connects(i, f)) ? [i] : [],
  );
  const at = (i: number): number => keep[i] as number;
  const { overFamily, portsOverFamily } = matrix;
  return {
    endpoints: keep.map((i) => matrix.endpoints[i] as Matrix['endpoints'][number]),
    rows: keep.map((i) => matrix.rows[i] as Matrix['rows'][number]),
    queries: matrix.queries,
    allowed: (a, b, q) => matrix.allowed(at(a), at(b), q),
    ports: (a, b) => matrix.ports(at(a), at(b)),
    ...(matrix.partial
      ? { partial: (a: number, b: number, q: number) => matrix.partial?.(at(a), at(b), q) }
      : {}),
    ...(matrix.partialPorts
      ? { partialPorts: (a: number, b: number) => matrix.partialPorts?.(at(a), at(b)) }
      : {}),
    ...(overFamily
      ? { overFamily: (a: number, b: number, q: number, f: IpFamily) => overFamily(at(a), at(b), q, f) }
      : {}),
    ...(portsOverFamily
      ? { portsOverFamily: (a: number, b: number, f: IpFamily) => portsOverFamily(at(a), at(b), f) }
      : {}),
    stats: matrix.stats,
  };
}
