/**
 * The graph outputs of `matrix` (dot, svg, html): kept here so the matrix command only routes
 * to them.
 */
import { GRAPH_FORMATS, isGraphFormat, matrixGraph, writeGraph, type Matrix } from '../analysis/index.ts';
import type { Cluster, Semantics } from '../model/types.ts';
import { checkChoice } from './common.ts';
import type { CliIo } from './io.ts';

export { GRAPH_FORMATS, isGraphFormat };

export const GROUP_BY_HELP =
  'workload, or namespace: one row (text, csv, md) or node (dot, svg, html) per namespace';

const LEGEND = 'An arrow: the source may open connections to the destination on the ports it names.';

/** Writes the matrix as a graph; `groupBy` is the raw --group-by value. */
export async function writeMatrixGraph(
  io: CliIo,
  matrix: Matrix,
  cluster: Cluster,
  format: (typeof GRAPH_FORMATS)[number],
  groupBy: unknown,
  semantics: Semantics,
): Promise<void> {
  const by = checkChoice('--group-by', groupBy, ['workload', 'namespace'] as const);
  io.stdout.write(await writeGraph(matrixGraph(matrix, cluster, { groupBy: by, semantics }), format, LEGEND));
}
