/** `suggest`'s public entry: observations from flows or expectations, the suggestion, its text. */
export { observeExpectations, observeFlows, type Observed } from './observe.ts';
export { suggestPolicies } from './suggest.ts';
export { suggestionSummary, suggestionYaml } from './format.ts';
export type * from './types.ts';
