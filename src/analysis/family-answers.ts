/**
 * Dual-stack answers: a matrix's verdicts and port sets over one address family at a time, kept
 * beside the combined answer (allowed only when every family both ends share allows it), so a
 * pair allowed over IPv4 and denied over IPv6 — an IPv4-only ipBlock — can say so instead of
 * being called denied. `matrix.ts` computes the per-family passes; this file keeps them and
 * answers per endpoint pair.
 */
import type { IpFamily } from '../net/ip.ts';
import type { Endpoint } from '../model/types.ts';
import type { PortSet } from '../semantics/index.ts';
import { hasBit, wordsFor } from './bit-rows.ts';
import type { Matrix } from './types.ts';

const FAMILY_BIT: Record<IpFamily, number> = { 4: 1, 6: 2 };

/** Per endpoint, the families it has addresses of: bit 0 IPv4, bit 1 IPv6 (3: dual-stack). */
export function familyMasks(endpoints: readonly Endpoint[]): number[] {
  return endpoints.map((e) => e.ips.reduce((mask, ip) => mask | FAMILY_BIT[ip.family], 0));
}

/**
 * Whether a connection between endpoints of these masks can use `family` — as the evaluator's
 * `connectionFamilies`: an endpoint without addresses (a workload template) takes the other's.
 */
export function sharesFamily(a: number, b: number, family: IpFamily): boolean {
  const bit = FAMILY_BIT[family];
  if (a === 0) return (b & bit) !== 0;
  if (b === 0) return (a & bit) !== 0;
  return (a & b & bit) !== 0;
}

/** One family's pass: a bit row set per query, or port set ids per class pair (row-major). */
type FamilyPass =
  | { readonly bits: readonly Uint32Array[] }
  | { readonly ports: { readonly setOf: Uint32Array; readonly sets: readonly PortSet[] } };

interface FamilyAnswers {
  /** The matrix members answering per family, to spread into a `Matrix`. */
  readonly members: Pick<Matrix, 'overFamily' | 'portsOverFamily'>;
}

/**
 * Answers per family for endpoints in classes `classOf` (class masks `masks`), from one pass
 * per family that `pass` computes over the class representatives.
 */
export function familyAnswers(
  classOf: ArrayLike<number>,
  masks: readonly number[],
  pass: (family: IpFamily) => FamilyPass,
): FamilyAnswers {
  const n = masks.length;
  const words = wordsFor(n);
  const passes = { 4: pass(4), 6: pass(6) };
  const classes = (from: number, to: number, family: IpFamily): [number, number] | undefined => {
    const a = classOf[from] as number;
    const b = classOf[to] as number;
    return sharesFamily(masks[a] as number, masks[b] as number, family) ? [a, b] : undefined;
  };
  return {
    members: {
      overFamily: (from, to, query, family) => {
        const pair = classes(from, to, family);
        const answer = passes[family];
        if (!pair || !('bits' in answer)) return undefined;
        return hasBit(answer.bits[query] as Uint32Array, pair[0] * words, pair[1]);
      },
      portsOverFamily: (from, to, family) => {
        const pair = classes(from, to, family);
        const answer = passes[family];
        if (!pair || !('ports' in answer)) return undefined;
        return answer.ports.sets[answer.ports.setOf[pair[0] * n + pair[1]] as number];
      },
    },
  };
}
