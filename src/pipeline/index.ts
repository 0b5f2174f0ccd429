/**
 * The pipeline's public entry.
 */
export { PolicyPipeline } from './pipeline.ts';
export type * from './types.ts';
/** What a group's members are, as the pipeline's state hands them out (compile's report reads them). */
export type { GroupMember } from '../state/index.ts';
export { changesBetween, upsertsOf } from './changes-between.ts';
export { buildTarget, compileCluster, nodesWithPods, renderCluster } from './build.ts';
