/**
 * The matrix by workload: each row stands for the pods of one workload (or its template). The
 * pod-level matrix is computed once per equivalence class of the members (a workload's pods are
 * nearly always one class, so a row costs one evaluation, not one per pod), and a row pair's
 * answer is what every pod pair of the two rows gets; where only some pod pairs can connect, the
 * cell says how many (`partial`).
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import type { IpFamily } from '../net/ip.ts';
import {
  intersectPorts,
  isNoPorts,
  subtractPorts,
  unionPorts,
  ALL_PORTS,
  EMPTY_PORTS,
} from '../model/port-set.ts';
import type { PortSet } from '../model/port-set.ts';
import { endpointClasses } from './equivalence.ts';
import { computeMatrix, matrixEndpoints, type MatrixOptions } from './matrix.ts';
import type { Matrix } from './types.ts';
import { groupEndpoints, type RowGrouping } from './workload-view.ts';

export interface ViewMatrixOptions extends MatrixOptions {
  /** Rows by workload (default), by pod, or by namespace. */
  readonly by?: RowGrouping;
}

/** The matrix with rows in the chosen view. */
export function computeViewMatrix(cluster: Cluster, options: ViewMatrixOptions): Matrix {
  const endpoints = options.endpoints ?? matrixEndpoints(cluster, options.namespaces);
  const groups = groupEndpoints(endpoints, options.by ?? 'workload', cluster);
  if (groups.every((g) => g.members.length === 1)) {
    const inner = computeMatrix(cluster, {
      ...options,
      endpoints: groups.map((g) => g.members[0] as Endpoint),
    });
    return { ...inner, rows: groups };
  }

  // Members → classes; the inner matrix has one representative per class.
  const members = groups.flatMap((g) => g.members);
  const { classOf, representatives } = endpointClasses(cluster, members, options.useClasses ?? true);
  const rowClasses: { classes: number[]; weights: number[] }[] = [];
  let m = 0;
  for (const group of groups) {
    const weightOf = new Map<number, number>();
    for (let i = 0; i < group.members.length; i++, m++) {
      const cls = classOf[m] as number;
      weightOf.set(cls, (weightOf.get(cls) ?? 0) + 1);
    }
    rowClasses.push({ classes: [...weightOf.keys()], weights: [...weightOf.values()] });
  }
  const inner = computeMatrix(cluster, { ...options, endpoints: representatives, useClasses: false });
  const pairsOf = (from: number, to: number) => ({
    a: rowClasses[from] as { classes: number[]; weights: number[] },
    b: rowClasses[to] as { classes: number[]; weights: number[] },
  });

  const allowedCount = (from: number, to: number, q: number): { allowed: number; total: number } => {
    const { a, b } = pairsOf(from, to);
    let allowed = 0;
    let total = 0;
    a.classes.forEach((ca, i) =>
      b.classes.forEach((cb, j) => {
        const weight = (a.weights[i] as number) * (b.weights[j] as number);
        total += weight;
        if (inner.allowed(ca, cb, q)) allowed += weight;
      }),
    );
    return { allowed, total };
  };
  const portBounds = (from: number, to: number): { every: PortSet; some: PortSet } => {
    const { a, b } = pairsOf(from, to);
    let every = ALL_PORTS;
    let some = EMPTY_PORTS;
    for (const ca of a.classes)
      for (const cb of b.classes) {
        const ports = inner.ports(ca, cb);
        every = intersectPorts(every, ports);
        some = unionPorts(some, ports);
      }
    return { every, some };
  };

  // Dual-stack: a row pair's answer over one family is every pod pair's that shares the family.
  const overFamily = inner.overFamily;
  const portsOverFamily = inner.portsOverFamily;
  const familyMembers: Pick<Matrix, 'overFamily' | 'portsOverFamily'> = {
    ...(overFamily && {
      overFamily: (from: number, to: number, q: number, family: IpFamily) => {
        const { a, b } = pairsOf(from, to);
        let shared = false;
        for (const ca of a.classes)
          for (const cb of b.classes) {
            const answer = overFamily(ca, cb, q, family);
            if (answer === false) return false;
            shared ||= answer === true;
          }
        return shared ? true : undefined;
      },
    }),
    ...(portsOverFamily && {
      portsOverFamily: (from: number, to: number, family: IpFamily) => {
        const { a, b } = pairsOf(from, to);
        let every: PortSet | undefined;
        for (const ca of a.classes)
          for (const cb of b.classes) {
            const ports = portsOverFamily(ca, cb, family);
            if (ports) every = every ? intersectPorts(every, ports) : ports;
          }
        return every;
      },
    }),
  };

  // Rows a row may reach: those holding a class some class of the row may reach.
  const rowsOfClass: number[][] = Array.from({ length: representatives.length }, () => []);
  rowClasses.forEach(({ classes }, row) => {
    for (const c of classes) (rowsOfClass[c] as number[]).push(row);
  });
  const reachedRows = inner.reachedRows
    ? (from: number): number[] => {
        const rows = new Set<number>();
        for (const c of (rowClasses[from] as { classes: number[] }).classes)
          for (const b of inner.reachedRows?.(c) ?? [])
            for (const row of rowsOfClass[b] as number[]) rows.add(row);
        return [...rows].sort((x, y) => x - y);
      }
    : undefined;

  return {
    ...familyMembers,
    ...(reachedRows ? { reachedRows } : {}),
    endpoints: groups.map((g) => g.members[0] as Endpoint),
    rows: groups,
    queries: inner.queries,
    allowed: (from, to, q) => {
      const { allowed, total } = allowedCount(from, to, q);
      return allowed === total;
    },
    partial: (from, to, q) => {
      const { allowed, total } = allowedCount(from, to, q);
      return allowed > 0 && allowed < total ? `${allowed} of ${total} pod pairs` : undefined;
    },
    ports: (from, to) => portBounds(from, to).every,
    partialPorts: (from, to) => {
      const { every, some } = portBounds(from, to);
      const extra = subtractPorts(some, every);
      return isNoPorts(extra) ? undefined : { ports: extra, where: 'some pod pairs only' };
    },
    stats: inner.stats,
  };
}
