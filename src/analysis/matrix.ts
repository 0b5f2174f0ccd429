/**
 * Reachability between every ordered pair of endpoints (self pairs included), computed once per
 * pair of equivalence classes and shared by every pair of members.
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import { compiledVerdicts } from './compiled-engine.ts';
import { allowedPorts, indexCluster, isAllowed, resolveNamedPort, type PortSet } from '../semantics/index.ts';
import type { Address, EvaluateOptions } from '../semantics/types.ts';
import { endpointClasses } from './equivalence.ts';
import type { Matrix, PortQuery } from './types.ts';
import { endpointRow } from './workload-view.ts';

export interface MatrixOptions extends EvaluateOptions {
  /** Port/protocol columns; empty computes allowed port sets per pair instead. */
  readonly queries: readonly PortQuery[];
  /** Only endpoints in these namespaces (all when absent or empty). */
  readonly namespaces?: readonly string[];
  /** Exactly these endpoints (the namespaces option is then ignored); default: the cluster's. */
  readonly endpoints?: readonly Endpoint[];
  /** Group endpoints into equivalence classes (default true). False evaluates every pair: for cross-checks and benchmarks. */
  readonly useClasses?: boolean;
  /**
   * Who decides per-port queries: the reference evaluator, or the compiled classifier (same
   * verdicts, built once; endpoints without addresses, e.g. workloads, still go to the
   * reference). Port sets (no queries) always come from the reference.
   */
  readonly engine?: 'reference' | 'compiled';
  /** Called with (done, total) class rows, for progress display. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** The endpoints a matrix covers: all, or those in the given namespaces (none given: all). */
export function matrixEndpoints(cluster: Cluster, namespaces: readonly string[] | undefined): Endpoint[] {
  const wanted = namespaces?.length ? new Set(namespaces) : undefined;
  return cluster.endpoints.filter((e) => !wanted || wanted.has(e.namespace));
}

export function computeMatrix(cluster: Cluster, options: MatrixOptions): Matrix {
  const started = performance.now();
  const endpoints = options.endpoints ?? matrixEndpoints(cluster, options.namespaces);
  const { classOf, representatives } = endpointClasses(cluster, endpoints, options.useClasses ?? true);
  const index = indexCluster(cluster);
  const classes = representatives.length;
  const queries = options.queries;
  const address = (endpoint: Endpoint): Extract<Address, { kind: 'endpoint' }> => ({
    kind: 'endpoint',
    endpoint,
  });
  let evaluations = 0;
  const compiled =
    options.engine === 'compiled' && queries.length > 0 ? compiledVerdicts(cluster, options) : undefined;

  let answers: Uint8Array | undefined;
  let portSets: PortSet[] | undefined;
  if (queries.length > 0) {
    answers = new Uint8Array(classes * classes * queries.length);
    for (let a = 0; a < classes; a++) {
      const src = address(representatives[a] as Endpoint);
      for (let b = 0; b < classes; b++) {
        const dst = address(representatives[b] as Endpoint);
        queries.forEach((query, q) => {
          const port =
            typeof query.port === 'number' ? query.port : resolveNamedPort(dst, query.port, query.protocol);
          evaluations++;
          const allowed =
            port !== undefined &&
            (compiled?.(src.endpoint.ips, dst.endpoint.ips, query.protocol, port) ??
              isAllowed(index, { src, dst, protocol: query.protocol, port }, options));
          (answers as Uint8Array)[(a * classes + b) * queries.length + q] = allowed ? 1 : 0;
        });
      }
      options.onProgress?.(a + 1, classes);
    }
  } else {
    portSets = new Array<PortSet>(classes * classes);
    for (let a = 0; a < classes; a++) {
      const src = address(representatives[a] as Endpoint);
      for (let b = 0; b < classes; b++) {
        evaluations++;
        portSets[a * classes + b] = allowedPorts(
          index,
          src,
          address(representatives[b] as Endpoint),
          options,
        );
      }
      options.onProgress?.(a + 1, classes);
    }
  }

  const cell = (from: number, to: number): number =>
    (classOf[from] as number) * classes + (classOf[to] as number);
  return {
    endpoints,
    rows: endpoints.map(endpointRow),
    queries,
    allowed: (from, to, q) => (answers ? answers[cell(from, to) * queries.length + q] === 1 : false),
    ports: (from, to) => {
      if (!portSets) throw new Error('matrix was computed per port; port sets are not available');
      return portSets[cell(from, to)] as PortSet;
    },
    stats: { classes, evaluations, millis: performance.now() - started },
  };
}
