/**
 * The renderers layer's public entry: the render-target registry. Each target's folder has its
 * own entry (`renderers/<target>/index.ts`) for code that needs that target's model.
 */
export {
  TARGET_NAMES,
  isTargetName,
  loadTarget,
  loadTargets,
  targetDescription,
  type OutputOf,
  type TargetName,
} from './registry.ts';
export { clusterAddresses, type ClusterAddresses } from './cluster-addresses.ts';
export type * from './types.ts';
