/**
 * The semantics layer's public entry: the reference evaluator and what it is built from.
 * Other layers import from here (or types.ts), never from the implementation files.
 */
export { evaluate, connectionFamilies, isAllowed } from './evaluate.ts';
export { allowedPorts, sidePorts } from './allowed-ports.ts';
export {
  indexCluster,
  isOwnNode,
  listMatchesAll,
  namedPortOf,
  peerMatches,
  resolveNamedPort,
  selectingPolicies,
  type ClusterIndex,
} from './match.ts';
export { describeStep, tierHolds, walkTier } from './tiers.ts';
export { tierPlan } from './tier-plan.ts';
export { ciliumRules, defaultTierEntries, defaultTierMembers } from './default-tier.ts';
export { explanationsBuilt } from './explanation-meter.ts';
export {
  describeAddress,
  describeClusterPeer,
  describeClusterRule,
  describePeer,
  describePort,
  describeRule,
} from './describe.ts';
export { clusterPeerMatches, clusterRulePorts, selectingClusterPolicies } from './cluster-match.ts';
export {
  ALL_PORTS,
  containsPorts,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isAllPorts,
  isNoPorts,
  portSetHas,
  portSetOf,
  subtractPorts,
  unionPorts,
  type PortRange,
  type PortSet,
} from '../model/port-set.ts';
export type * from './types.ts';
export { addressCuts } from './address-cuts.ts';
