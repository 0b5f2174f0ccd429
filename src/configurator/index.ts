/**
 * The configurator layer's public entry.
 */
export { Configurator } from './configurator.ts';
export { TierTables } from './tier-tables.ts';
export { canonicalTable } from './table-id.ts';
export {
  firstMatch,
  longestPrefixMatch,
  netMatches,
  type GroupLookup,
  type GroupExpansion,
  type Packet,
} from './table-evaluator.ts';
export {
  stateGroupLookup,
  parseGroupReference,
  referenceMembers,
  referenceAddresses,
} from './state-groups.ts';
export { compiledAllows, type CompiledView } from './compiled-verdict.ts';
export * from './types.ts';
