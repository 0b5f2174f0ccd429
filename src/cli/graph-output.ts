/**
 * The graph outputs of `matrix` (dot, svg, html): kept here so the matrix command only routes
 * to them. The graph is built from classes (analysis/graph/class-graph.ts), drawn per workload
 * when that is readable and per namespace otherwise (`--group-by` chooses), and brought to a
 * readable size (aggregate.ts); a layout Graphviz would take minutes over is refused, with what
 * to ask instead, unless `--force`.
 */
import {
  GRAPH_FORMATS,
  isGraphFormat,
  layoutSeconds,
  pictureGraph,
  writeGraph,
  type PictureRequest,
} from '../analysis/index.ts';
import type { Cluster } from '../model/types.ts';
import { UsageError, type CliIo } from './io.ts';
import type { Progress } from './progress.ts';

export { GRAPH_FORMATS, isGraphFormat };

export const GROUP_BY_HELP =
  'workload, or namespace: one row (text, csv, md) or node (dot, svg, html) per namespace; graphs take namespaces by themselves when workloads are too many to draw';

const LEGEND = 'An arrow: the source may open connections to the destination on the ports it names.';

/** Past this many seconds of layout, svg and html are refused (unless --force). */
const LAYOUT_LIMIT_SECONDS = 30;

/** Writes the matrix as a graph. */
export async function writeMatrixGraph(
  io: CliIo,
  cluster: Cluster,
  format: (typeof GRAPH_FORMATS)[number],
  request: PictureRequest & { readonly force: boolean; readonly progress?: Progress },
): Promise<void> {
  request.progress?.phase('building the graph');
  const progress = request.progress;
  const graph = pictureGraph(cluster, {
    ...request,
    ...(progress ? { onProgress: (done: number, total: number) => progress.update(done, total) } : {}),
  });
  const seconds = layoutSeconds(graph);
  if (format !== 'dot' && seconds > LAYOUT_LIMIT_SECONDS && !request.force) {
    request.progress?.finish();
    throw new UsageError(
      `laying out ${graph.nodes.length.toLocaleString('en-US')} nodes and ${graph.edges.length.toLocaleString('en-US')} edges would take Graphviz about ${Math.round(seconds / 60) || 1} min: ` +
        'ask for less — --group-by namespace, --focus NS/NAME, -n NAMESPACE, --port PORT — or -o dot to lay it out elsewhere; --force waits for it',
    );
  }
  if (format !== 'dot')
    request.progress?.phase(`laying out ${graph.nodes.length} nodes, ${graph.edges.length} edges`);
  const text = await writeGraph(graph, format, LEGEND);
  request.progress?.finish();
  io.stdout.write(text);
}
