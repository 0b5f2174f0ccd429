/**
 * The heatmap's data: who may connect to whom on one port (or on any port), counted in pod pairs
 * and aggregated by namespace, by workload within a pair of namespaces, or pod by pod within a
 * pair of workloads. One matrix of classes per port answers all three levels: a cell's count is
 * summed over the class pairs that may connect (each class lies in one namespace), so the
 * namespace view costs what is allowed — not a walk over every pod pair (10⁸ at 10,000 pods) —
 * and drilling down never evaluates again.
 */
import { computeViewMatrix } from '../analysis/index.ts';
import type { ClassAnswers, Matrix, PortQuery } from '../analysis/types.ts';
import type { Cluster, Endpoint, Semantics } from '../model/types.ts';
import { EMPTY_PORTS, isNoPorts, type PortSet } from '../semantics/index.ts';
import { orderForStructure } from './ordering.ts';
import type { HeatAxis, Heatmap, HeatmapLevel } from './api-types.ts';

/** A group of pods: a namespace or a workload, as a range of the sorted pod list. */
interface Group {
  readonly id: string;
  readonly label: string;
  readonly start: number;
  readonly end: number;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const workloadOf = (e: Endpoint): string =>
  `${e.namespace}/${e.workload?.name ?? e.name}[${e.workload?.kind ?? 'Pod'}]`;

export class Reachability {
  /** Pods sorted by namespace, workload and name: every group is a contiguous range. */
  readonly pods: readonly Endpoint[];
  readonly namespaces: readonly Group[];
  private readonly workloadsByNamespace = new Map<string, Group[]>();
  private readonly workloadById = new Map<string, Group>();
  private readonly matrices = new Map<string, Matrix>();
  private readonly membersOf = new WeakMap<Matrix, ClassMembers>();
  /** Namespace heatmaps by port: the page's first view, asked for by every page opened. */
  private readonly namespaceHeatmaps = new Map<string, Heatmap>();

  constructor(
    readonly cluster: Cluster,
    private readonly semantics: Semantics,
    /** Who answers: `auto` (the CLI's choice); the tests ask each engine. */
    private readonly engine: 'auto' | 'compiled' | 'reference' = 'auto',
  ) {
    this.pods = [...cluster.endpoints].sort(
      (a, b) =>
        compare(a.namespace, b.namespace) || compare(workloadOf(a), workloadOf(b)) || compare(a.name, b.name),
    );
    const namespaces: Group[] = [];
    for (let i = 0; i < this.pods.length;) {
      const ns = (this.pods[i] as Endpoint).namespace;
      let j = i;
      const workloads: Group[] = [];
      while (j < this.pods.length && (this.pods[j] as Endpoint).namespace === ns) {
        const wl = workloadOf(this.pods[j] as Endpoint);
        let k = j;
        while (k < this.pods.length && workloadOf(this.pods[k] as Endpoint) === wl) k++;
        const group = { id: wl, label: wl.slice(ns.length + 1), start: j, end: k };
        workloads.push(group);
        this.workloadById.set(wl, group);
        j = k;
      }
      namespaces.push({ id: ns, label: ns, start: i, end: j });
      this.workloadsByNamespace.set(ns, workloads);
      i = j;
    }
    this.namespaces = namespaces;
  }

  /** The pod-level matrix for a port (undefined: allowed port sets), computed once. */
  matrix(query: PortQuery | undefined): Matrix {
    const key = query ? `${query.protocol}/${query.port}` : 'any';
    let found = this.matrices.get(key);
    if (!found) {
      found = computeViewMatrix(this.cluster, {
        by: 'pod',
        endpoints: this.pods,
        queries: query ? [query] : [],
        semantics: this.semantics,
        engine: this.engine,
      });
      this.matrices.set(key, found);
    }
    return found;
  }

  /**
   * One pod pair of a cell, to say why in one click: an allowed pair when the cell has one, else
   * its first pair; and a port to ask about — the one shown, or (any port) the first port the pair
   * may use. Undefined when the cell has no pair (one pod with itself) or names nothing known.
   */
  representative(
    query: PortQuery | undefined,
    level: HeatmapLevel,
    from: string,
    to: string,
  ): { from: Endpoint; to: Endpoint; ports: PortSet } | undefined {
    const group = (id: string): Group | undefined =>
      level === 'namespace'
        ? this.namespaces.find((g) => g.id === id)
        : level === 'workload'
          ? this.workloadById.get(id)
          : (() => {
              const i = this.pods.findIndex((p) => p.id === id);
              return i < 0 ? undefined : { id, label: id, start: i, end: i + 1 };
            })();
    const a = group(from);
    const b = group(to);
    if (!a || !b) return undefined;
    const matrix = this.matrix(query);
    const classes = matrix.classes;
    if (!classes) return undefined;
    let first: { from: number; to: number } | undefined;
    // An allowed pair: classes of the row that reach a class with a pod in the column.
    const members = this.classMembers(matrix, classes);
    const seen = new Set<number>();
    for (let i = a.start; i < a.end; i++) {
      const cls = classes.classOf[i] as number;
      if (seen.has(cls)) continue;
      seen.add(cls);
      let found: { from: number; to: number; ports: PortSet } | undefined;
      classes.forEachReached(cls, (target, ports) => {
        if (found) return;
        const j = (members[target] as readonly number[]).find(
          (pod) => pod >= b.start && pod < b.end && pod !== i,
        );
        if (j !== undefined) found = { from: i, to: j, ports };
      });
      if (found)
        return {
          from: this.pods[found.from] as Endpoint,
          to: this.pods[found.to] as Endpoint,
          ports: found.ports,
        };
      first ??=
        b.end - b.start > 1 || b.start !== i
          ? { from: i, to: b.start === i ? b.start + 1 : b.start }
          : undefined;
    }
    return first
      ? { from: this.pods[first.from] as Endpoint, to: this.pods[first.to] as Endpoint, ports: EMPTY_PORTS }
      : undefined;
  }

  /** Each class's pods, by index into the sorted pod list. */
  private classMembers(matrix: Matrix, classes: ClassAnswers): ClassMembers {
    let found = this.membersOf.get(matrix);
    if (!found) {
      const members: number[][] = classes.representatives.map(() => []);
      classes.classOf.forEach((cls, pod) => (members[cls] as number[]).push(pod));
      this.membersOf.set(matrix, (found = members));
    }
    return found;
  }

  /** The heatmap of one level: namespaces; workloads of two namespaces; pods of two workloads. */
  heatmap(
    query: PortQuery | undefined,
    level: HeatmapLevel,
    from?: string,
    to?: string,
  ): Heatmap | { error: string } {
    if (level === 'namespace') {
      const key = query ? `${query.protocol}/${query.port}` : 'any';
      let found = this.namespaceHeatmaps.get(key);
      if (!found) this.namespaceHeatmaps.set(key, (found = this.aggregate(query, level) as Heatmap));
      return found;
    }
    return this.aggregate(query, level, from, to);
  }

  private aggregate(
    query: PortQuery | undefined,
    level: HeatmapLevel,
    from?: string,
    to?: string,
  ): Heatmap | { error: string } {
    const started = performance.now();
    const matrix = this.matrix(query);
    let rows: readonly Group[];
    let columns: readonly Group[];
    if (level === 'namespace') {
      rows = columns = this.namespaces;
    } else if (level === 'workload') {
      const a = this.workloadsByNamespace.get(from ?? '');
      const b = this.workloadsByNamespace.get(to ?? '');
      if (!a || !b) return { error: `no namespace with pods named ${!a ? from : to}` };
      rows = a;
      columns = b;
    } else {
      const a = this.workloadById.get(from ?? '');
      const b = this.workloadById.get(to ?? '');
      if (!a || !b) return { error: `no workload named ${!a ? from : to}` };
      rows = podsOf(this.pods, a);
      columns = podsOf(this.pods, b);
    }
    const classes = matrix.classes;
    if (!classes) throw new Error('the matrix has no class answers');
    const cells =
      level === 'pod'
        ? podCells(classes, rows, columns)
        : groupCells(classes, this.classMembers(matrix, classes), rows, columns);
    const axis = (g: Group): HeatAxis => ({ id: g.id, label: g.label, pods: g.end - g.start });
    let rowAxis = rows.map(axis);
    let columnAxis = columns.map(axis);
    let orderedCells = cells;
    if (level === 'namespace') {
      // Rows and columns in an order that puts namespaces that talk next to each other.
      const order = orderForStructure(rows.length, cells);
      const position = new Int32Array(rows.length);
      order.forEach((old, i) => (position[old] = i));
      rowAxis = order.map((i) => rowAxis[i] as HeatAxis);
      columnAxis = rowAxis;
      orderedCells = cells.map(([r, c, n]) => [position[r] as number, position[c] as number, n]);
    }
    return {
      level,
      port: query ? `${query.port}/${query.protocol}` : 'any',
      rows: rowAxis,
      columns: columnAxis,
      cells: orderedCells,
      millis: Math.round(performance.now() - started),
      engine: matrix.stats.engine,
    };
  }
}

/** Each class's pods (indexes into the sorted pod list), computed once per matrix. */
type ClassMembers = readonly (readonly number[])[];

/**
 * Cells of groups (namespaces, or workloads of two namespaces) that are ranges of the pod list:
 * for each class with pods among the rows, the classes it reaches, counted per pair of groups —
 * members of the two classes in each group, less a pod's pair with itself.
 */
function groupCells(
  classes: ClassAnswers,
  members: ClassMembers,
  rows: readonly Group[],
  columns: readonly Group[],
): [number, number, number][] {
  const groupOf = (groups: readonly Group[]) => {
    const starts = groups.map((g) => g.start);
    return (pod: number): number => {
      // The group whose range holds the pod (binary search over the starts), or -1.
      let low = 0;
      let high = starts.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if ((starts[mid] as number) <= pod) low = mid + 1;
        else high = mid;
      }
      const g = groups[low - 1];
      return g && pod < g.end ? low - 1 : -1;
    };
  };
  const rowOf = groupOf(rows);
  const columnOf = groupOf(columns);
  /** Pods of a class per group: [group, count] pairs. */
  const spread = (pods: readonly number[], of: (pod: number) => number): Map<number, number> => {
    const counts = new Map<number, number>();
    for (const pod of pods) {
      const g = of(pod);
      if (g >= 0) counts.set(g, (counts.get(g) ?? 0) + 1);
    }
    return counts;
  };
  const counts = new Map<number, number>();
  const width = columns.length;
  members.forEach((pods, a) => {
    const from = spread(pods, rowOf);
    if (from.size === 0) return;
    classes.forEachReached(a, (b) => {
      const to = spread(members[b] as readonly number[], columnOf);
      for (const [r, m] of from)
        for (const [c, k] of to) {
          // A pod's connection to itself does not count: within one class, one group, once per pod.
          const self = a === b && (rows[r] as Group).start === (columns[c] as Group).start ? m : 0;
          const n = m * k - self;
          if (n > 0) counts.set(r * width + c, (counts.get(r * width + c) ?? 0) + n);
        }
    });
  });
  return [...counts]
    .map(([key, n]): [number, number, number] => [Math.floor(key / width), key % width, n])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1]);
}

/** Cells of single pods (two workloads' pods, a few hundred each at most): one lookup per pod pair. */
function podCells(
  classes: ClassAnswers,
  rows: readonly Group[],
  columns: readonly Group[],
): [number, number, number][] {
  const cells: [number, number, number][] = [];
  rows.forEach((row, r) =>
    columns.forEach((column, c) => {
      if (row.start === column.start) return;
      const a = classes.classOf[row.start] as number;
      const b = classes.classOf[column.start] as number;
      if (!isNoPorts(classes.ports(a, b))) cells.push([r, c, 1]);
    }),
  );
  return cells;
}

function podsOf(pods: readonly Endpoint[], group: Group): Group[] {
  const result: Group[] = [];
  for (let i = group.start; i < group.end; i++) {
    const pod = pods[i] as Endpoint;
    result.push({ id: pod.id, label: pod.name, start: i, end: i + 1 });
  }
  return result;
}
