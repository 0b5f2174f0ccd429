/**
 * The heatmap's data: who may connect to whom on one port (or on any port), counted in pod pairs
 * and aggregated by namespace, by workload within a pair of namespaces, or pod by pod within a
 * pair of workloads. One pod-level matrix per port answers all three levels, so drilling down
 * costs a walk over the pods of the two groups, never a new evaluation.
 */
import { computeViewMatrix } from '../analysis/index.ts';
import type { Matrix, PortQuery } from '../analysis/types.ts';
import type { Cluster, Endpoint, Semantics } from '../model/types.ts';
import { isNoPorts } from '../semantics/index.ts';
import { orderForStructure } from './ordering.ts';
import type { HeatAxis, Heatmap, HeatmapLevel } from './types.ts';

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
  /** Namespace heatmaps by port: the page's first view, asked for by every page opened. */
  private readonly namespaceHeatmaps = new Map<string, Heatmap>();

  constructor(
    readonly cluster: Cluster,
    private readonly semantics: Semantics,
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
        engine: 'auto',
      });
      this.matrices.set(key, found);
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
    const allowed = allowedTest(matrix, query);
    const cells: [number, number, number][] = [];
    // Rows and columns are ranges of the pod list: one pass over the pod pairs of the view.
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r] as Group;
      const counts = new Map<number, number>();
      for (let c = 0; c < columns.length; c++) {
        const column = columns[c] as Group;
        let n = 0;
        for (let i = row.start; i < row.end; i++)
          for (let j = column.start; j < column.end; j++) if (i !== j && allowed(i, j)) n++;
        if (n > 0) counts.set(c, n);
      }
      for (const [c, n] of counts) cells.push([r, c, n]);
    }
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

function podsOf(pods: readonly Endpoint[], group: Group): Group[] {
  const result: Group[] = [];
  for (let i = group.start; i < group.end; i++) {
    const pod = pods[i] as Endpoint;
    result.push({ id: pod.id, label: pod.name, start: i, end: i + 1 });
  }
  return result;
}

/** Whether pod i may connect to pod j: on the port, or on any port. */
function allowedTest(matrix: Matrix, query: PortQuery | undefined): (i: number, j: number) => boolean {
  if (query) return (i, j) => matrix.allowed(i, j, 0);
  return (i, j) => !isNoPorts(matrix.ports(i, j));
}
