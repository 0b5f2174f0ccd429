/**
 * Sets of (protocol, port) as sorted, disjoint, inclusive ranges per protocol. Used to answer
 * "which ports may A use to reach B" in one pass instead of 65,535 evaluations.
 */
import { PROTOCOLS, type Protocol } from './types.ts';

export type PortRange = readonly [number, number];

export interface PortSet {
  readonly ranges: Readonly<Record<Protocol, readonly PortRange[]>>;
}

export const MIN_PORT = 1;
export const MAX_PORT = 65535;

export const EMPTY_PORTS: PortSet = { ranges: { TCP: [], UDP: [], SCTP: [] } };
export const ALL_PORTS: PortSet = {
  ranges: { TCP: [[MIN_PORT, MAX_PORT]], UDP: [[MIN_PORT, MAX_PORT]], SCTP: [[MIN_PORT, MAX_PORT]] },
};

export function portSetOf(entries: readonly { protocol: Protocol; from: number; to: number }[]): PortSet {
  const ranges: Record<Protocol, PortRange[]> = { TCP: [], UDP: [], SCTP: [] };
  for (const e of entries) ranges[e.protocol].push([e.from, e.to]);
  return { ranges: { TCP: normalize(ranges.TCP), UDP: normalize(ranges.UDP), SCTP: normalize(ranges.SCTP) } };
}

function normalize(ranges: PortRange[]): PortRange[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const result: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = result[result.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else result.push([from, to]);
  }
  return result;
}

export function unionPorts(a: PortSet, b: PortSet): PortSet {
  const entries = PROTOCOLS.flatMap((protocol) =>
    [...a.ranges[protocol], ...b.ranges[protocol]].map(([from, to]) => ({ protocol, from, to })),
  );
  return portSetOf(entries);
}

export function intersectPorts(a: PortSet, b: PortSet): PortSet {
  const ranges: Record<Protocol, PortRange[]> = { TCP: [], UDP: [], SCTP: [] };
  for (const protocol of PROTOCOLS) {
    const left = a.ranges[protocol];
    const right = b.ranges[protocol];
    let i = 0;
    let j = 0;
    while (i < left.length && j < right.length) {
      const l = left[i] as PortRange;
      const r = right[j] as PortRange;
      const from = Math.max(l[0], r[0]);
      const to = Math.min(l[1], r[1]);
      if (from <= to) ranges[protocol].push([from, to]);
      if (l[1] < r[1]) i++;
      else j++;
    }
  }
  return { ranges };
}

/** The ports of `a` that are not in `b`. */
export function subtractPorts(a: PortSet, b: PortSet): PortSet {
  const complement: Record<Protocol, PortRange[]> = { TCP: [], UDP: [], SCTP: [] };
  for (const protocol of PROTOCOLS) {
    let next = MIN_PORT;
    for (const [from, to] of b.ranges[protocol]) {
      if (from > next) complement[protocol].push([next, from - 1]);
      next = to + 1;
    }
    if (next <= MAX_PORT) complement[protocol].push([next, MAX_PORT]);
  }
  return intersectPorts(a, { ranges: complement });
}

export function portSetHas(set: PortSet, protocol: Protocol, port: number): boolean {
  return set.ranges[protocol].some(([from, to]) => port >= from && port <= to);
}

export function isAllPorts(set: PortSet): boolean {
  return PROTOCOLS.every((p) => {
    const r = set.ranges[p];
    return r.length === 1 && r[0]?.[0] === MIN_PORT && r[0]?.[1] === MAX_PORT;
  });
}

export function isNoPorts(set: PortSet): boolean {
  return PROTOCOLS.every((p) => set.ranges[p].length === 0);
}

/** `all`, `none`, or e.g. `TCP 80,443,8000-8080; UDP 53` (a whole protocol is `TCP all`). */
export function formatPortSet(set: PortSet): string {
  if (isAllPorts(set)) return 'all';
  if (isNoPorts(set)) return 'none';
  return PROTOCOLS.filter((p) => set.ranges[p].length > 0)
    .map((p) => {
      const r = set.ranges[p];
      if (r.length === 1 && r[0]?.[0] === MIN_PORT && r[0]?.[1] === MAX_PORT) return `${p} all`;
      return `${p} ${r.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',')}`;
    })
    .join('; ');
}
