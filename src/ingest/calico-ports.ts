/**
 * Calico's port lists (`ports`, `notPorts` of an EntityRule): numbers, `"first:last"` ranges and
 * port names, each checked where it is written; and what is left of ranges once others are taken
 * out (a rule's ports less its notPorts). calico-rules.ts makes them a rule's ports.
 */
import type { DecodeContext } from './decode-context.ts';
import { checkPortNumber } from './decode-policy.ts';
import type { FieldPath } from './types.ts';
import { portNameProblem } from './validate-names.ts';

interface PortList {
  readonly ranges: (readonly [number, number])[];
  readonly named: string[];
}

/** Calico's ports: numbers, `"first:last"` ranges, and port names. */
export function readPortList(
  ctx: DecodeContext,
  raw: readonly (string | number)[],
  path: FieldPath,
): PortList | undefined {
  const out: PortList = { ranges: [], named: [] };
  const before = ctx.diagnostics.length;
  raw.forEach((entry, i) => {
    const at = [...path, i];
    if (typeof entry === 'number') {
      checkPortNumber(ctx, entry, at);
      out.ranges.push([entry, entry]);
      return;
    }
    const range = /^([0-9]+):([0-9]+)$/.exec(entry);
    if (range) {
      const from = Number(range[1]);
      const to = Number(range[2]);
      if (from < 1 || to > 65535 || from > to)
        ctx.report(
          'PORT_OUT_OF_RANGE',
          `port range "${entry}" is not first:last with 1 ≤ first ≤ last ≤ 65535`,
          at,
        );
      else out.ranges.push([from, to]);
      return;
    }
    if (/^[0-9]+$/.test(entry)) {
      checkPortNumber(ctx, Number(entry), at);
      out.ranges.push([Number(entry), Number(entry)]);
      return;
    }
    const problem = portNameProblem(entry);
    if (problem) ctx.report('PORT_NAME_INVALID', `named port "${entry}" is invalid: ${problem}`, at);
    else out.named.push(entry);
  });
  return ctx.errorSince(before) ? undefined : out;
}

/** `from` minus `remove`, as sorted disjoint ranges. */
export function subtractRanges(
  from: readonly (readonly [number, number])[],
  remove: readonly (readonly [number, number])[],
): [number, number][] {
  let current: [number, number][] = from.map(([a, b]) => [a, b]);
  for (const [ra, rb] of remove) {
    const next: [number, number][] = [];
    for (const [a, b] of current) {
      if (rb < a || ra > b) next.push([a, b]);
      else {
        if (a < ra) next.push([a, ra - 1]);
        if (rb < b) next.push([rb + 1, b]);
      }
    }
    current = next;
  }
  return current.sort((x, y) => x[0] - y[0]);
}
