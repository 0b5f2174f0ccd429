/**
 * Palisade as a library: load manifests, evaluate connections, compute matrices.
 */
export * from './ingest/index.ts';
export * from './semantics/index.ts';
export * from './analysis/index.ts';
export * from './model/types.ts';
export { makeSelector, selectorMatches, selectorText, MATCH_ALL } from './model/selector.ts';
export { DIAGNOSTIC_CATALOGUE, hasErrors, makeDiagnostic, sortDiagnostics } from './model/diagnostics.ts';
export {
  parseIp,
  parseCidr,
  formatIp,
  cidrContains,
  cidrCovers,
  type IpAddress,
  type Cidr,
  type IpFamily,
} from './net/ip.ts';
