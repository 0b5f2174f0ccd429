/**
 * The pipeline's public entry.
 */
export { PolicyPipeline, type PipelineOptions } from './pipeline.ts';
export type * from './types.ts';
export { changesBetween, upsertsOf } from './changes-between.ts';
export {
  buildTarget,
  compileCluster,
  nodesWithPods,
  renderCluster,
  type CompileRequest,
  type TargetRequest,
} from './build.ts';
