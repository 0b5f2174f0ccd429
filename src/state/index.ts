/**
 * The state layer's public entry.
 */
export { ClusterState } from './cluster-state.ts';
export { clusterPolicyOwner } from './cluster-policy-store.ts';
export { ALL_PODS, clusterRuleNets, hasNodesPeers, namedProtocols } from './cluster-policy-groups.ts';
export { groupKey, groupAdmits, portNumbers, sharedGroupKey } from './group-key.ts';
export {
  ruleNets,
  peerNetGroup,
  policyGroupSpecs,
  policyTemplates,
  selectorGroupSpec,
  type PeerNet,
  type RuleTemplate,
} from './policy-groups.ts';
export type * from './types.ts';
