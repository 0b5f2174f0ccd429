/**
 * Ordered policy for map-based datapaths (no priorities in the datapath): the CFP's MapState.
 */
export { MapState } from './map-state.ts';
export { portRangePrefixes, prefixText } from './port-prefix.ts';
export { insertByPriority, intersect } from './prefix-insertion.ts';
export type * from './types.ts';
