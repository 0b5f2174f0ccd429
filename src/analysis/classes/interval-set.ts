/**
 * Sets of class positions as sorted, disjoint, half-open intervals: `[s0, e0, s1, e1, …]` in one
 * Int32Array. Classes are numbered in address order (class-order.ts), so a CIDR is one interval
 * and a namespace's pods are usually a few; a set costs what its intervals cost, not one bit per
 * class. A 100,000-class matrix over bit rows is 1.25 GB per port; over intervals, the rows of
 * shape (a) are a handful of numbers each.
 */

export type IntervalSet = Int32Array;

export const EMPTY_SET: IntervalSet = new Int32Array(0);

/** Number of members. */
export function setSize(set: IntervalSet): number {
  let size = 0;
  for (let i = 0; i < set.length; i += 2) size += (set[i + 1] as number) - (set[i] as number);
  return size;
}

export function setsEqual(a: IntervalSet, b: IntervalSet): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The set of the given members (any order, duplicates allowed). */
export function setOf(members: Iterable<number>): IntervalSet {
  const sorted = Int32Array.from(members).sort();
  const out: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const m = sorted[i] as number;
    const last = out.length - 1;
    if (last >= 0 && m <= (out[last] as number)) {
      if (m === out[last]) out[last] = m + 1;
      continue;
    }
    out.push(m, m + 1);
  }
  return Int32Array.from(out);
}

/** Whether `member` is in the set (binary search over the intervals). */
export function hasMember(set: IntervalSet, member: number): boolean {
  let low = 0;
  let high = set.length >> 1;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((set[2 * mid + 1] as number) <= member) low = mid + 1;
    else high = mid;
  }
  return low < set.length >> 1 && (set[2 * low] as number) <= member;
}

/** Calls `visit` for each member, in order. */
export function forEachMember(set: IntervalSet, visit: (member: number) => void): void {
  for (let i = 0; i < set.length; i += 2)
    for (let m = set[i] as number, end = set[i + 1] as number; m < end; m++) visit(m);
}

const UNION = 0;
const INTERSECT = 1;
const SUBTRACT = 2;

/**
 * The merge of two sets by a boolean operation on membership, in one pass over both interval
 * lists (the sets of a side are built by thousands of these: no closure, one typed array).
 */
function combine(a: IntervalSet, b: IntervalSet, op: number): IntervalSet {
  const out = new Int32Array(a.length + b.length);
  let length = 0;
  let i = 0;
  let j = 0;
  let inA = false;
  let inB = false;
  let open = false;
  while (i < a.length || j < b.length) {
    const nextA = i < a.length ? (a[i] as number) : 0x7fffffff;
    const nextB = j < b.length ? (b[j] as number) : 0x7fffffff;
    const at = nextA < nextB ? nextA : nextB;
    if (nextA === at) {
      inA = !inA;
      i++;
    }
    if (nextB === at) {
      inB = !inB;
      j++;
    }
    const now = op === UNION ? inA || inB : op === INTERSECT ? inA && inB : inA && !inB;
    if (now !== open) {
      // Adjacent intervals join: closing at `at` and opening at `at` cancel.
      if (length > 0 && out[length - 1] === at) length--;
      else out[length++] = at;
      open = now;
    }
  }
  return length === 0 ? EMPTY_SET : out.slice(0, length);
}

/** Whether single interval `a` lies within single interval `b`. */
const within = (a: IntervalSet, b: IntervalSet): boolean =>
  (b[0] as number) <= (a[0] as number) && (a[1] as number) <= (b[1] as number);

export function unionSets(a: IntervalSet, b: IntervalSet): IntervalSet {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  if (a.length === 2 && b.length === 2) {
    if (within(a, b)) return b;
    if (within(b, a)) return a;
  }
  return combine(a, b, UNION);
}

export function intersectSets(a: IntervalSet, b: IntervalSet): IntervalSet {
  if (a.length === 0 || b.length === 0) return EMPTY_SET;
  if (a === b) return a;
  if (a.length === 2 && b.length === 2) {
    if (within(a, b)) return a;
    if (within(b, a)) return b;
    if ((a[1] as number) <= (b[0] as number) || (b[1] as number) <= (a[0] as number)) return EMPTY_SET;
  }
  return combine(a, b, INTERSECT);
}

export function subtractSets(a: IntervalSet, b: IntervalSet): IntervalSet {
  if (a.length === 0 || b.length === 0) return a;
  if (a === b) return EMPTY_SET;
  if (a.length === 2 && b.length === 2) {
    if (within(a, b)) return EMPTY_SET;
    if ((a[1] as number) <= (b[0] as number) || (b[1] as number) <= (a[0] as number)) return a;
  }
  return combine(a, b, SUBTRACT);
}

/**
 * Members of `a` that are also in `b`, visited in order — iterating the smaller set and looking
 * each member up in the other, so a huge set meeting a small one costs the small one.
 */
export function forEachCommon(
  a: IntervalSet,
  b: IntervalSet,
  size: (set: IntervalSet) => number,
  visit: (member: number) => void,
): void {
  if (a.length === 0 || b.length === 0) return;
  const sizeA = size(a);
  const sizeB = size(b);
  const [small, large] = sizeA <= sizeB ? [a, b] : [b, a];
  // A merge walks both interval lists; lookups cost a binary search per member of the smaller.
  const lookups = Math.min(sizeA, sizeB) * Math.log2((large.length >> 1) + 2);
  if (a.length + b.length <= lookups) {
    forEachMember(intersectSets(a, b), visit);
    return;
  }
  forEachMember(small, (m) => {
    if (hasMember(large, m)) visit(m);
  });
}

/**
 * A union of interval sets kept as its parts: a side's peers are often a big shared group (every
 * pod of a team's namespaces) plus a few small ones; materializing the union per side would copy
 * the big group once per side. Parts may overlap; members are tested part by part.
 */
export type PeerSet = readonly IntervalSet[];

export const NO_PEERS: PeerSet = [];

export function peersEmpty(peers: PeerSet): boolean {
  for (const part of peers) if (part.length > 0) return false;
  return true;
}

export function peersHave(peers: PeerSet, member: number): boolean {
  for (const part of peers) if (hasMember(part, member)) return true;
  return false;
}

/** An upper bound of the members (exact when the parts do not overlap). */
export function peersSize(peers: PeerSet, size: (set: IntervalSet) => number): number {
  let total = 0;
  for (const part of peers) total += size(part);
  return total;
}

/** Whether two peer sets have the same parts (a cheap test: equal sets in other parts are not found equal). */
export function samePeers(a: PeerSet, b: PeerSet): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!setsEqual(a[i] as IntervalSet, b[i] as IntervalSet)) return false;
  return true;
}

/** The union as one interval set. */
export function peersUnion(peers: PeerSet): IntervalSet {
  let union: IntervalSet = EMPTY_SET;
  for (const part of peers) union = unionSets(union, part);
  return union;
}

/** How many members two sets share, by one walk over both interval lists (nothing built). */
export function intersectionSize(a: IntervalSet, b: IntervalSet): number {
  let i = 0;
  let j = 0;
  let total = 0;
  while (i < a.length && j < b.length) {
    const from = Math.max(a[i] as number, b[j] as number);
    const to = Math.min(a[i + 1] as number, b[j + 1] as number);
    if (from < to) total += to - from;
    if ((a[i + 1] as number) < (b[j + 1] as number)) i += 2;
    else j += 2;
  }
  return total;
}
