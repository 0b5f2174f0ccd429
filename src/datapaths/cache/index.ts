/**
 * The renderer cache's public entry.
 */
export { RendererCache, type CacheChanges, type CacheOptions, type CacheSnapshot } from './renderer-cache.ts';
export { buildGlobalTable, combinedTable, pairRules, type KnownPod, type Side } from './combine.ts';
export { tablePorts } from './table-ports.ts';
export { flattenTiers, type FlattenedTables } from './flatten-tiers.ts';
export { flattenedPods, ownNodeNotes } from './own-node.ts';
