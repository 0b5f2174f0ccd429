/**
 * The matrix of classes from the reference evaluator, for few classes (or semantics the compiled
 * path does not implement): every pair of classes evaluated, answers kept compactly — a bit per
 * class pair and queried port, or a small number per class pair naming one of the distinct port
 * sets — not an object per pair. Also the pairs the compiled engine leaves to the reference:
 * those with a class without addresses (a workload read from a repository).
 *
 * Dual-stack (`family`): the same passes restricted to one address family.
 */
import type { Endpoint } from '../model/types.ts';
import type { IpFamily } from '../net/ip.ts';
import {
  allowedPorts,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isAllowed,
  resolveNamedPort,
  sidePorts,
  type ClusterIndex,
  type PortSet,
} from '../semantics/index.ts';
import type { Address, EvaluateOptions } from '../semantics/types.ts';
import { setBit, wordsFor } from './bit-rows.ts';
import { familyMasks, sharesFamily } from './family-answers.ts';
import type { PortQuery } from './types.ts';

export interface ReferenceContext {
  readonly index: ClusterIndex;
  readonly representatives: readonly Endpoint[];
  readonly options: EvaluateOptions & { readonly onProgress?: (done: number, total: number) => void };
  evaluations: number;
}

const at = (endpoint: Endpoint): Extract<Address, { kind: 'endpoint' }> => ({ kind: 'endpoint', endpoint });

/** One port column as a bit per class pair (row-major); over one address family when given. */
export function queryBits(context: ReferenceContext, query: PortQuery, family?: IpFamily): Uint32Array {
  const { representatives, options } = context;
  const n = representatives.length;
  const words = wordsFor(n);
  const bits = new Uint32Array(n * words);
  const inFamily = family === undefined ? {} : { family };
  everyPair(context, (a, b, src, dst) => {
    const port =
      typeof query.port === 'number' ? query.port : resolveNamedPort(dst, query.port, query.protocol);
    if (
      port !== undefined &&
      isAllowed(context.index, { src, dst, protocol: query.protocol, port, ...inFamily }, options)
    )
      setBit(bits, a * words, b);
  });
  return bits;
}

/** Every pair of classes, a row at a time (with progress). */
function everyPair(
  context: ReferenceContext,
  visit: (a: number, b: number, src: Address, dst: Address) => void,
): void {
  const { representatives } = context;
  const n = representatives.length;
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++) {
      context.evaluations++;
      visit(a, b, at(representatives[a] as Endpoint), at(representatives[b] as Endpoint));
    }
    context.options.onProgress?.(a + 1, n);
  }
}

/** Interned port sets: equal sets are one object with one id. */
export class PortSetTable {
  readonly sets: PortSet[] = [];
  private readonly idByText = new Map<string, number>();

  id(set: PortSet): number {
    const text = formatPortSet(set);
    let id = this.idByText.get(text);
    if (id === undefined) {
      this.idByText.set(text, (id = this.sets.length));
      this.sets.push(set);
    }
    return id;
  }
}

/** The allowed ports between two classes, over one family when given (as the reference decides it). */
export function referencePorts(
  context: ReferenceContext,
  a: number,
  b: number,
  family: IpFamily | undefined,
  masks: readonly number[],
): PortSet | undefined {
  const { index, representatives, options } = context;
  context.evaluations++;
  const src = at(representatives[a] as Endpoint);
  const dst = at(representatives[b] as Endpoint);
  if (family === undefined) return allowedPorts(index, src, dst, options);
  if (!sharesFamily(masks[a] as number, masks[b] as number, family)) return undefined;
  return intersectPorts(
    sidePorts(index, src, dst, 'egress', family, options),
    sidePorts(index, src, dst, 'ingress', family, options),
  );
}

/** Port sets per class pair (row-major) as ids into a list of distinct sets; over one family when given. */
export function portSetIds(
  context: ReferenceContext,
  family?: IpFamily,
): { setOf: Uint32Array; sets: PortSet[] } {
  const n = context.representatives.length;
  const table = new PortSetTable();
  const setOf = new Uint32Array(n * n);
  const masks = family === undefined ? [] : familyMasks(context.representatives);
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++)
      setOf[a * n + b] = table.id(referencePorts(context, a, b, family, masks) ?? EMPTY_PORTS);
    context.options.onProgress?.(a + 1, n);
  }
  return { setOf, sets: table.sets };
}
