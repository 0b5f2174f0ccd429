/**
 * The rows a matrix lists beside its endpoints' own: the address ranges outside the cluster
 * (outside.ts), each a source and a destination of every endpoint row, and the ingress controller
 * (ingress-controller.ts), a source only. Every writer of matrix-formats.ts walks them alike — a
 * line per connection in listings, a row in tables — so the walks and the label a table gives a
 * range live here, once, and the writers' file stays within its size (it had passed 500 lines).
 */
import { isNoPorts, subtractPorts, type PortSet } from '../../semantics/index.ts';
import type { Matrix, MatrixRow } from '../types.ts';
import type { OutsideClass } from '../outside.ts';
import type { IngressControllerPeer } from '../ingress-controller.ts';

/** Every connection from the ingress controller to a row: [from, to, ports, row]. */
export function* controllerLines(
  matrix: Matrix,
  peer: IngressControllerPeer | undefined,
): Iterable<[string, string, PortSet, number]> {
  if (!peer) return;
  for (let r = 0; r < matrix.rows.length; r++)
    yield [peer.label, (matrix.rows[r] as MatrixRow).label, peer.into[r] as PortSet, r];
}

/** Address rows in tables: their own label when short, else its start (a legend gives all). */
const MAX_ADDRESS_LABEL = 40;
export function addressLabel(c: OutsideClass): string {
  return c.label.length <= MAX_ADDRESS_LABEL ? c.label : `${c.label.slice(0, MAX_ADDRESS_LABEL - 1)}…`;
}

/** Every connection between a row and an address class: [from, to, ports, row, class, outward]. */
export function* outsideLines(
  matrix: Matrix,
  outside: readonly OutsideClass[],
): Iterable<[string, string, PortSet, number, OutsideClass, boolean]> {
  const ids = matrix.rows.map((r) => r.label);
  for (const c of outside)
    for (let r = 0; r < ids.length; r++) {
      yield [ids[r] as string, c.label, c.out[r] as PortSet, r, c, true];
      yield [c.label, ids[r] as string, c.into[r] as PortSet, r, c, false];
    }
}

/** The ports of an address line that some pods of its row have and others not (none: undefined). */
export function somePodsOnly(
  c: OutsideClass,
  r: number,
  outward: boolean,
  every: PortSet,
): PortSet | undefined {
  const some = (outward ? c.outSome[r] : c.intoSome[r]) as PortSet;
  if (some === every) return undefined;
  const more = subtractPorts(some, every);
  return isNoPorts(more) ? undefined : more;
}
