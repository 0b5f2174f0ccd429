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
  if (ranges.length <= 1) return ranges;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const result: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = result[result.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else result.push([from, to]);
  }
  return result;
}

/**
 * Set operations merge the two sorted lists in one pass, per protocol, and hand back an operand
 * unchanged where the answer is that operand (an empty side of a union, a whole-range side of an
 * intersection): the port-set matrix runs several per pair of classes, and most are trivial.
 */
export function unionPorts(a: PortSet, b: PortSet): PortSet {
  if (a === b || isNoPorts(b)) return a;
  if (isNoPorts(a)) return b;
  return {
    ranges: {
      TCP: unionRanges(a.ranges.TCP, b.ranges.TCP),
      UDP: unionRanges(a.ranges.UDP, b.ranges.UDP),
      SCTP: unionRanges(a.ranges.SCTP, b.ranges.SCTP),
    },
  };
}

function unionRanges(left: readonly PortRange[], right: readonly PortRange[]): readonly PortRange[] {
  if (right.length === 0) return left;
  if (left.length === 0) return right;
  const result: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    const l = left[i];
    const r = right[j];
    const next = (r === undefined || (l !== undefined && l[0] <= r[0]) ? left[i++] : right[j++]) as PortRange;
    const last = result[result.length - 1];
    if (last && next[0] <= last[1] + 1) {
      if (next[1] > last[1]) last[1] = next[1];
    } else result.push([next[0], next[1]]);
  }
  return result;
}

export function intersectPorts(a: PortSet, b: PortSet): PortSet {
  if (a === b || a === ALL_PORTS) return b;
  if (b === ALL_PORTS) return a;
  return {
    ranges: {
      TCP: intersectRanges(a.ranges.TCP, b.ranges.TCP),
      UDP: intersectRanges(a.ranges.UDP, b.ranges.UDP),
      SCTP: intersectRanges(a.ranges.SCTP, b.ranges.SCTP),
    },
  };
}

function intersectRanges(left: readonly PortRange[], right: readonly PortRange[]): readonly PortRange[] {
  if (left.length === 0 || right.length === 0) return NO_RANGES;
  if (isWhole(right)) return left;
  if (isWhole(left)) return right;
  const result: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    const l = left[i] as PortRange;
    const r = right[j] as PortRange;
    const from = l[0] > r[0] ? l[0] : r[0];
    const to = l[1] < r[1] ? l[1] : r[1];
    if (from <= to) result.push([from, to]);
    if (l[1] < r[1]) i++;
    else j++;
  }
  return result;
}

const NO_RANGES: readonly PortRange[] = [];

function isWhole(ranges: readonly PortRange[]): boolean {
  const only = ranges[0];
  return ranges.length === 1 && only !== undefined && only[0] === MIN_PORT && only[1] === MAX_PORT;
}

/** Whether two sets share a port (what `intersectPorts` would answer non-empty, without building it). */
export function portSetsMeet(a: PortSet, b: PortSet): boolean {
  for (const protocol of PROTOCOLS) {
    const left = a.ranges[protocol];
    const right = b.ranges[protocol];
    let i = 0;
    let j = 0;
    while (i < left.length && j < right.length) {
      const l = left[i] as PortRange;
      const r = right[j] as PortRange;
      if (l[0] <= r[1] && r[0] <= l[1]) return true;
      if (l[1] < r[1]) i++;
      else j++;
    }
  }
  return false;
}

/** The ports of `a` that are not in `b`. */
export function subtractPorts(a: PortSet, b: PortSet): PortSet {
  if (isNoPorts(b)) return a;
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

/** Whether every port of `inner` is in `outer`. */
export function containsPorts(outer: PortSet, inner: PortSet): boolean {
  if (outer === inner || outer === ALL_PORTS) return true;
  for (const protocol of PROTOCOLS) {
    const big = outer.ranges[protocol];
    let i = 0;
    for (const [from, to] of inner.ranges[protocol]) {
      while (i < big.length && (big[i] as PortRange)[1] < from) i++;
      const range = big[i];
      if (!range || range[0] > from || range[1] < to) return false;
    }
  }
  return true;
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
