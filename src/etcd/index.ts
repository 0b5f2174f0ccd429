/**
 * The etcd access layer's public entry: the store (lazily loads the etcd client) and how to
 * connect to it (TLS, credentials), errors as one line, leader election, role-based access
 * control as data, and a real etcd process (with TLS, its certificates made here) for tests,
 * benchmarks and the lab.
 */
export { connectEtcd, prefixEnd } from './client.ts';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.ts';
export { connectionProblems, DEFAULT_REQUEST_TIMEOUT_MS } from './connection.ts';
export {
  describeEtcdError,
  isEtcdClientError,
  isLeaseNotFound,
  type EtcdFailure,
  type EtcdFailureKind,
} from './errors.ts';
export { ensureReachable, etcdAccessError, EtcdAccessError, EtcdUnreachableError } from './reachable.ts';
export { campaign, type CampaignOptions } from './election.ts';
export {
  enableEtcdAuth,
  etcdctlCommands,
  keyRange,
  ROOT_USER,
  type EtcdAuthPlan,
  type EtcdKeys,
  type EtcdPermission,
  type EtcdRole,
  type EtcdUser,
} from './rbac.ts';
export { issueCertificates, pkiFiles, type CertificateFiles, type EtcdPki } from './certs.ts';
export { startEtcd, etcdBinary, freePort, type EtcdServer, type StartEtcdOptions } from './server.ts';
export type * from './types.ts';
