/**
 * The semantic connectivity diff of two inputs: for every pair of workloads (a workload's pods
 * together, matched across inputs by identity — pod names that change with every rollout do not
 * matter; or pods one by one with `by: 'pod'`) and every pair of a workload and a range of
 * addresses outside the cluster, the ports allowed before and after, where they differ, and the
 * changed objects each difference comes from. As in the matrix, a pair of workloads allows what
 * every pair of their pods allows; ports only some pod pairs may use are reported apart.
 *
 * Work is proportional to what changed. A pair can only change if one of its sides can: the
 * source's egress (the policies selecting its pods, by content, or its pods' fields) or the
 * destination's ingress. Only the rows of units whose egress may have changed and the columns of
 * those whose ingress may have changed are visited, and in them the changed side is compared
 * first: where it is equal before and after for every pod pair (one signature per pod, one
 * evaluation per distinct signature — `SidedEvaluator`), the pair is skipped without evaluating
 * its other side.
 */
import { PROTOCOLS, type Cluster, type Endpoint, type Semantics } from '../../model/types.ts';
import type { PortRange } from '../../model/port-set.ts';
import { subtractPorts } from '../../model/port-set.ts';
import { formatInterval, normalizeIntervals, type IpInterval } from '../../net/intervals.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  unionPorts,
  type Address,
  type PortSet,
} from '../../semantics/index.ts';
import { addressRanges, type AddressRange } from '../address-ranges.ts';
import { SidedEvaluator, type Side } from '../sided.ts';
import { PairBounds } from './pair-bounds.ts';
import { ReachFinder } from './touched.ts';
import type { EndpointView } from '../workload-view.ts';
import { EndpointFieldKeys, objectAndEndpointChanges } from './objects.ts';
import { policyVersions } from './policy-versions.ts';
import { markChangedSides, unitsOf, type Unit } from './units.ts';
import type { ConnectionChange, ConnectivityDiff, DiffPeer, ObjectChange } from './types.ts';

interface DiffOptions {
  /** Default `v1`. */
  readonly semantics?: Semantics;
  /** Compare workloads (default: a workload's pods together) or pods one by one. */
  readonly by?: EndpointView;
  /** Only connections with an endpoint in these namespaces at both ends (all when absent or empty). */
  readonly namespaces?: readonly string[];
  /** Also compare endpoints with addresses outside the cluster (default true). */
  readonly addresses?: boolean;
}

/** One end of a pair: a unit, or an address range (the same address before and after). */
interface End {
  readonly unit?: Unit;
  readonly range?: AddressRange;
  readonly peer: DiffPeer;
  /** The addresses it stands for before and after (its pods; a range's representative). */
  readonly before: readonly Address[];
  readonly after: readonly Address[];
}

/** The other ends a changed side must be compared with. */
type Scope =
  | 'all'
  | {
      /** The unit whose side changed: its pair with itself changes with its members, which no peer names. */
      readonly unit: Unit;
      /** The units its change reaches, when few; else the endpoints, a unit reached when a member is. */
      readonly units?: ReadonlySet<Unit>;
      readonly endpoints: ReadonlySet<Endpoint>;
      readonly ranges: ReadonlySet<AddressRange>;
    };

/** Ports every pod pair may use, and ports only some may. */
interface Allowed {
  readonly every: PortSet;
  readonly some: PortSet;
}

export function diffConnectivity(
  before: Cluster,
  after: Cluster,
  options: DiffOptions = {},
): ConnectivityDiff {
  const started = performance.now();
  const semantics = options.semantics ?? 'v1';
  // Each policy's key once (the object comparison and every endpoint's side read it), and each
  // endpoint's fields once per input.
  const keyOf = policyVersions(before, after);
  const fieldKeys = { before: new EndpointFieldKeys(before), after: new EndpointFieldKeys(after) };
  const {
    objects,
    endpoints: changedEndpoints,
    namespaces: changedNamespaces,
  } = objectAndEndpointChanges(before, after, {
    ...fieldKeys,
    policy: keyOf,
  });
  const changed = new Set(objects.map((o) => o.object));
  const old = new SidedEvaluator(before, semantics);
  const next = new SidedEvaluator(after, semantics);
  const nodesChanged = objects.some((o) => o.object.startsWith('Node '));
  // A side's policies by content as a short string of numbers: one number per distinct content
  // (a string of every selecting policy's whole content per endpoint and side was most of a
  // diff's garbage at 100,000 pods).
  const contentNumbers = new Map<string, number>();
  const numberOf = (policy: object): number => {
    const key = keyOf(policy);
    let n = contentNumbers.get(key);
    if (n === undefined) contentNumbers.set(key, (n = contentNumbers.size));
    return n;
  };
  const units = unitsOf(before, after, options, fieldKeys);
  markChangedSides(units, {
    before,
    after,
    old,
    next,
    semantics,
    fieldKeys,
    changed,
    changedEndpoints,
    changedNamespaces,
    nodesChanged,
    numberOf,
  });
  const ranges = options.addresses === false ? [] : addressRanges([before, after]);
  const asAddresses = (members: readonly Endpoint[]): Address[] =>
    members.map((endpoint) => ({ kind: 'endpoint', endpoint }));
  const ends: End[] = [
    ...units.map((unit) => ({
      unit,
      peer: unit.peer,
      before: asAddresses(unit.before),
      after: asAddresses(unit.after),
    })),
    ...ranges.map((range) => {
      const ip: Address[] = [{ kind: 'ip', ip: range.representative }];
      return { range, peer: rangePeer([range.interval]), before: ip, after: ip };
    }),
  ];

  const found: ConnectionChange[] = [];
  let comparedPairs = 0;
  const compare = (from: End, to: End): void => {
    comparedPairs++;
    const result = comparePair(old, next, from, to);
    if (!result) return;
    const partial = (a: Allowed): PortSet | undefined => {
      const only = subtractPorts(a.some, a.every);
      return isNoPorts(only) ? undefined : only;
    };
    const partialBefore = partial(result.before);
    const partialAfter = partial(result.after);
    const wasNone = isNoPorts(result.before.some);
    const isNone = isNoPorts(result.after.some);
    found.push({
      from: from.peer,
      to: to.peer,
      change: wasNone ? 'added' : isNone ? 'removed' : 'changed',
      before: result.before.every,
      after: result.after.every,
      ...(partialBefore ? { partialBefore } : {}),
      ...(partialAfter ? { partialAfter } : {}),
      causes: [...new Set([...(from.unit?.causes.egress ?? []), ...(to.unit?.causes.ingress ?? [])])].sort(),
    });
  };
  const isolationChanged = (namespace: string): boolean =>
    before.namespaces.get(namespace)?.legacyIngressIsolation !==
    after.namespaces.get(namespace)?.legacyIngressIsolation;
  // Which ends a unit's row (egress) and column (ingress) must be compared with.
  const finder = new ReachFinder(old, next, ranges, semantics, keyOf);
  const unitOf = new Map<Endpoint, Unit>();
  for (const unit of units) {
    for (const e of unit.before) unitOf.set(e, unit);
    for (const e of unit.after) unitOf.set(e, unit);
  }
  const scope = (unit: Unit | undefined, side: Side): Scope | undefined => {
    if (!unit) return undefined;
    // Node changes move node addresses and own-node checks: not a matter of the policies' peers.
    if (nodesChanged) return 'all';
    // The proposal's namespace DefaultDeny isolates (or frees) every pod's ingress from every
    // source, whatever the policies say: not a side's policies, so no peer of theirs names it.
    if (side === 'ingress' && semantics === 'v1beta1-proposal' && isolationChanged(unit.peer.namespace))
      return 'all';
    if (!unit.fieldsChanged && !unit.sideChanged[side]) return undefined;
    const reach = unit.fieldsChanged
      ? finder.wholeReach(unit.before, unit.after, side)
      : finder.reach(unit.before, unit.after, side);
    if (reach === 'all') return 'all';
    // Few reached endpoints: their units, counted. Many (an ipBlock holding the whole cluster):
    // the endpoints stand for their units as they are, not copied into a set of units per change.
    const reached = { unit, endpoints: reach.endpoints, ranges: reach.ranges };
    return reach.endpoints.size * 4 > unitOf.size ? reached : { ...reached, units: reachedUnits(reached) };
  };
  const reaches = (s: Exclude<Scope, 'all'>, unit: Unit): boolean =>
    s.units
      ? s.units.has(unit)
      : unit === s.unit ||
        unit.before.some((e) => s.endpoints.has(e)) ||
        unit.after.some((e) => s.endpoints.has(e));
  const within = (s: Scope | undefined, end: End): boolean =>
    s !== undefined &&
    (s === 'all' || (end.unit ? reaches(s, end.unit) : s.ranges.has(end.range as AddressRange)));
  // The ends a scope names (a scope of a few units is not a walk over the cluster — with a change
  // in 1% of namespaces that walk was the square again); every end is `bounds`' to give.
  const endOfUnit = new Map<Unit, End>();
  const endOfRange = new Map<AddressRange, End>();
  for (const end of ends) {
    if (end.unit) endOfUnit.set(end.unit, end);
    if (end.range) endOfRange.set(end.range, end);
  }
  const reachedUnits = (s: Exclude<Scope, 'all'>): Set<Unit> => {
    const reached = new Set<Unit>([s.unit]);
    for (const e of s.endpoints) {
      const other = unitOf.get(e);
      if (other) reached.add(other);
    }
    return reached;
  };
  function* named(s: Exclude<Scope, 'all'>): Iterable<End> {
    for (const u of s.units ?? reachedUnits(s)) {
      const end = endOfUnit.get(u);
      if (end) yield end;
    }
    for (const r of s.ranges) {
      const end = endOfRange.get(r);
      if (end) yield end;
    }
  }
  // Of those, the ones a pair with `end` may differ with at all (pair-bounds.ts).
  const bounds = new PairBounds(ends, old, next);
  const endsIn = (s: Scope, end: End, side: Side): Iterable<End> =>
    bounds.candidates(
      end,
      side,
      s === 'all'
        ? undefined
        : {
            // Without the units counted, at most one per reached endpoint (and the unit itself).
            size: (s.units?.size ?? 1 + s.endpoints.size) + s.ranges.size,
            has: (e) => within(s, e),
            ends: () => named(s),
          },
    );
  const rows = new Map<End, Scope | undefined>(ends.map((end) => [end, scope(end.unit, 'egress')]));
  for (const from of ends) {
    const row = rows.get(from);
    if (!row) continue;
    for (const to of endsIn(row, from, 'egress')) compare(from, to);
  }
  for (const to of ends) {
    const column = scope(to.unit, 'ingress');
    if (!column) continue;
    for (const from of endsIn(column, to, 'ingress')) if (!within(rows.get(from), to)) compare(from, to);
  }
  return {
    endpoints: {
      added: units.filter((u) => u.before.length === 0).map((u) => u.peer),
      removed: units.filter((u) => u.after.length === 0).map((u) => u.peer),
    },
    objects,
    connections: sortConnections(mergeRanges(found)),
    stats: { comparedPairs, millis: performance.now() - started },
  };
}

function allowedBetween(
  evaluator: SidedEvaluator,
  sources: readonly Address[],
  destinations: readonly Address[],
): Allowed {
  if (sources.length === 0 || destinations.length === 0) return { every: EMPTY_PORTS, some: EMPTY_PORTS };
  let every = ALL_PORTS;
  let some = EMPTY_PORTS;
  let pairs = 0;
  for (const src of sources)
    for (const dst of destinations) {
      // A pod to itself never leaves its network namespace: no policy decides it, no change.
      if (src.kind === 'endpoint' && dst.kind === 'endpoint' && src.endpoint === dst.endpoint) continue;
      pairs++;
      const ports = evaluator.ports(src, dst);
      every = intersectPorts(every, ports);
      some = unionPorts(some, ports);
    }
  // Only a pod's pair with itself: everything, always.
  return pairs === 0 ? { every: ALL_PORTS, some: ALL_PORTS } : { every, some };
}

const same = (a: Allowed, b: Allowed): boolean =>
  portSetsEqual(a.every, b.every) && portSetsEqual(a.some, b.some);

function portSetsEqual(a: PortSet, b: PortSet): boolean {
  if (a === b) return true;
  for (const protocol of PROTOCOLS) {
    const x = a.ranges[protocol];
    const y = b.ranges[protocol];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) {
      const p = x[i] as PortRange;
      const q = y[i] as PortRange;
      if (p[0] !== q[0] || p[1] !== q[1]) return false;
    }
  }
  return true;
}

/** Whether some pod pair may allow something (a bound, no evaluation). */
function mayAllow(
  evaluator: SidedEvaluator,
  sources: readonly Address[],
  destinations: readonly Address[],
): boolean {
  for (const s of sources) for (const d of destinations) if (evaluator.mayAllow(s, d)) return true;
  return false;
}

/** Ports before and after, when they differ. */
function comparePair(
  old: SidedEvaluator,
  next: SidedEvaluator,
  from: End,
  to: End,
): { before: Allowed; after: Allowed } | undefined {
  const src0 = from.before;
  const dst0 = to.before;
  const src1 = from.after;
  const dst1 = to.after;
  // Nothing about the pods changed and only one side's policies did: if that side gives every pod
  // pair the same ports before and after, so does the pair (members are sorted by their fields,
  // so equal fields pair up).
  // No pod pair may allow anything, before or after (their ports' bounds share none): equal.
  if (!mayAllow(old, src0, dst0) && !mayAllow(next, src1, dst1)) return undefined;
  const stable = (end: End): boolean => !end.unit || !end.unit.fieldsChanged;
  if (stable(from) && stable(to) && src0.length === src1.length && dst0.length === dst1.length) {
    const egress = from.unit?.sideChanged.egress ?? false;
    const ingress = to.unit?.sideChanged.ingress ?? false;
    if (egress !== ingress) {
      const side: Side = egress ? 'egress' : 'ingress';
      let differs = false;
      for (let i = 0; i < src0.length && !differs; i++)
        for (let j = 0; j < dst0.length && !differs; j++)
          differs = !portSetsEqual(
            old.sidePorts(src0[i] as Address, dst0[j] as Address, side),
            next.sidePorts(src1[i] as Address, dst1[j] as Address, side),
          );
      if (!differs) return undefined;
      // The other side is the same before and after: where it lets nothing through for any pod
      // pair, the pair allows nothing either way (most pairs a changed ipBlock reaches end here).
      const other: Side = side === 'egress' ? 'ingress' : 'egress';
      let through = false;
      for (let i = 0; i < src0.length && !through; i++)
        for (let j = 0; j < dst0.length && !through; j++)
          through = !isNoPorts(old.sidePorts(src0[i] as Address, dst0[j] as Address, other));
      if (!through) return undefined;
    }
  }
  const before = allowedBetween(old, src0, dst0);
  const after = allowedBetween(next, src1, dst1);
  return same(before, after) ? undefined : { before, after };
}

function rangePeer(intervals: readonly IpInterval[]): DiffPeer {
  const merged = normalizeIntervals(intervals);
  const id = merged.map(formatInterval).join(',');
  return { type: 'addresses', id, label: id, intervals: merged };
}

/** Changes between one endpoint and several address ranges that are alike become one change. */
function mergeRanges(changes: readonly ConnectionChange[]): ConnectionChange[] {
  const result: ConnectionChange[] = [];
  const groups = new Map<
    string,
    { first: ConnectionChange; intervals: IpInterval[]; rangeIsFrom: boolean }
  >();
  for (const c of changes) {
    const rangeIsFrom = c.from.type === 'addresses';
    const range = rangeIsFrom ? c.from : c.to;
    if (range.type !== 'addresses') {
      result.push(c);
      continue;
    }
    const endpoint = rangeIsFrom ? c.to : c.from;
    const ports = (p: PortSet | undefined): string => (p ? formatPortSet(p) : '');
    const key = [
      rangeIsFrom,
      endpoint.id,
      endpoint.type === 'endpoint' ? endpoint.kind : '',
      ports(c.before),
      ports(c.after),
      ports(c.partialBefore),
      ports(c.partialAfter),
      c.causes.join(','),
    ].join('\u0000');
    const group = groups.get(key);
    if (group) group.intervals.push(...range.intervals);
    else groups.set(key, { first: c, intervals: [...range.intervals], rangeIsFrom });
  }
  for (const { first, intervals, rangeIsFrom } of groups.values()) {
    const peer = rangePeer(intervals);
    result.push(rangeIsFrom ? { ...first, from: peer } : { ...first, to: peer });
  }
  return result;
}

function sortConnections(changes: ConnectionChange[]): ConnectionChange[] {
  const rank = (p: DiffPeer): string => `${p.type === 'endpoint' ? 0 : 1}${p.label}`;
  return changes.sort((a, b) => {
    const x = rank(a.from);
    const y = rank(b.from);
    if (x !== y) return x < y ? -1 : 1;
    const u = rank(a.to);
    const v = rank(b.to);
    return u < v ? -1 : u > v ? 1 : 0;
  });
}

export type { ObjectChange };
