/**
 * Semantic diff and NCA's set queries between two inputs.
 */
export { diffConnectivity } from './diff.ts';
export { classDiff, type ClassDiff } from './classes.ts';
export { endpointObject } from './objects.ts';
export type * from './types.ts';
export { runQuery, type QueryName, type QueryResult, type Witness } from './queries.ts';
