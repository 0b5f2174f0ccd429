/**
 * The graph a picture shows (`matrix -o dot|svg|html`, serve's graph): per workload when that is
 * readable, per namespace otherwise, brought to a readable size (aggregate.ts).
 */
import type { Cluster, Endpoint, Semantics } from '../../model/types.ts';
import type { PortQuery } from '../types.ts';
import { aggregateGraph, PICTURE_BUDGET } from './aggregate.ts';
import { classGraph, labelled } from './class-graph.ts';
import type { ConnectivityGraph } from './graph.ts';

export interface PictureRequest {
  readonly endpoints: readonly Endpoint[];
  readonly queries: readonly PortQuery[];
  readonly semantics: Semantics;
  /** Undefined: workloads when they fit a picture, namespaces otherwise. */
  readonly groupBy: 'workload' | 'namespace' | undefined;
  readonly onProgress?: (done: number, total: number) => void;
}

/** The picture's graph; an explicit `workload` is drawn as asked (a layout check may refuse it). */
export function pictureGraph(cluster: Cluster, request: PictureRequest): ConnectivityGraph {
  const build = (groupBy: 'workload' | 'namespace') =>
    classGraph(cluster, {
      endpoints: request.endpoints,
      queries: request.queries,
      semantics: request.semantics,
      groupBy,
      ...(request.onProgress ? { onProgress: request.onProgress } : {}),
    });
  let graph = build(request.groupBy ?? 'workload');
  const tooBig = graph.nodes.length > PICTURE_BUDGET.nodes || graph.edges.length > PICTURE_BUDGET.edges;
  if (request.groupBy === undefined && tooBig) graph = build('namespace');
  if (request.groupBy === 'workload') return labelled(graph);
  return labelled(aggregateGraph(graph).graph);
}
