/**
 * The state layer's public entry.
 */
export { ClusterState } from './cluster-state.ts';
export { groupKey, groupAdmits } from './group-key.ts';
export { ruleNets, rulePorts, policyGroupSpecs, type PeerNet } from './policy-groups.ts';
export type * from './types.ts';
