/**
 * The renderer cache's public entry.
 */
export { RendererCache, type CacheChanges, type CacheSnapshot } from './renderer-cache.ts';
export { buildGlobalTable, combinedTable, pairRules, type KnownPod, type Side } from './combine.ts';
export { tablePorts } from './table-ports.ts';
export { flattenTiers } from './flatten-tiers.ts';
export { flattenedPods, ownNodeNotes } from './own-node.ts';
