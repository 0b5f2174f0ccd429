/**
 * The ingest layer's public entry: load manifests into a validated Cluster with diagnostics.
 */
export {
  loadCluster,
  loadFromObjects,
  loadFromRawObjects,
  loadFromTexts,
  type LoadClusterOptions,
} from './load.ts';
export { DEFAULT_MAX_FILE_BYTES, readStdin } from './read-inputs.ts';
export { semanticsDiagnostics } from './semantics-diagnostics.ts';
export { attributeWorkloads, type OwnedEndpoint } from './workloads.ts';
export type * from './types.ts';
export { decodeObject, type DecodeOutcome } from './decode-object.ts';
export { endpointId } from './build-cluster.ts';
export { templateStandsAlone, topWorkload, workloadKey, type OwnerLookup } from './workloads.ts';
export { controllerOf } from './decode-endpoint.ts';
export { portNameProblem } from './validate-names.ts';
export { misplacedTab, tabMessage, type DocumentText } from './yaml-syntax-errors.ts';
export { objectIdentity } from './object-identity.ts';
