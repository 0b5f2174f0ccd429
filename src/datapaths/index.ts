/**
 * The datapaths layer's public entry: the one registry of backends (render targets, node
 * datapaths, lab fleets). Each backend's folder has its own entry (`datapaths/<backend>/index.ts`)
 * for code that needs that backend's model.
 */
export {
  TARGET_NAMES,
  isTargetName,
  loadTarget,
  loadTargets,
  targetDescription,
  NODE_DATAPATH_NAMES,
  isNodeDatapathName,
  isClusterWideDatapath,
  openNodeDatapath,
  lockForProcess,
  FLEET_NAMES,
  loadFleet,
  type FleetName,
} from './registry.ts';
export { DEFAULT_RUN_DIR } from './node-lock.ts';
export { vppKeys, aclDocuments, sessionDocuments, documentOps } from './vpp-documents.ts';
export { clusterAddresses } from './cluster-addresses.ts';
export type * from './types.ts';
