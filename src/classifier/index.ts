/**
 * The classifier layer's public entry: Mizar-style maps and bitmaps per endpoint.
 */
export { Classifier } from './classifier.ts';
export type { ClassifierOptions, ClassifierPacket } from './classifier-types.ts';
export { DirectionTable, PROTOCOL_INDEX } from './direction-table.ts';
export { LpmTrie } from './lpm-trie.ts';
export { TrackedClassifier } from './conntrack.ts';
export type { TierTable } from './tier-bitmap-table.ts';
export { ACTION_ALLOW, ACTION_DENY, ACTION_PASS } from './tier-bitmap-table.ts';
export { referenceMembers } from './state-group-resolver.ts';
export type { EndpointMaps } from './classifier-types.ts';
