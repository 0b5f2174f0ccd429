/**
 * The renderer cache's public entry.
 */
export { RendererCache, type CacheChanges, type CacheOptions, type CacheSnapshot } from './renderer-cache.ts';
export { combineRules, buildGlobalTable, type KnownPod, type Side } from './combine.ts';
export { tablePorts } from './table-ports.ts';
