/**
 * The state layer's public entry.
 */
export { ClusterState, type Selection } from './cluster-state.ts';
export { groupKey, groupAdmits } from './group-key.ts';
export {
  ruleNets,
  rulePorts,
  policyGroupSpecs,
  policyTemplates,
  selectorGroupSpec,
  type PeerNet,
  type PolicyTemplates,
  type RuleTemplate,
} from './policy-groups.ts';
export type * from './types.ts';
