/**
 * The etcd access layer's public entry: the store (lazily loads the etcd client) and how to
 * connect to it (TLS, credentials), errors as one line, leader election, role-based access
 * control as data, and a real etcd process (with TLS, its certificates made here) for tests,
 * benchmarks and the lab.
 */
export { connectEtcd, prefixEnd } from './client.ts';
export { MemoryStore } from './memory-store.ts';
export { connectionProblems } from './connection.ts';
export { describeEtcdError, isEtcdClientError, isLeaseNotFound } from './errors.ts';
export { ensureReachable, etcdAccessError, EtcdAccessError, EtcdUnreachableError } from './reachable.ts';
export { campaign } from './election.ts';
export {
  enableEtcdAuth,
  etcdctlCommands,
  ROOT_USER,
  type EtcdAuthPlan,
  type EtcdRole,
  type EtcdUser,
} from './rbac.ts';
export { issueCertificates, pkiFiles, type EtcdPki } from './certs.ts';
export { startEtcd, etcdBinary, freePort, type EtcdServer, type StartEtcdOptions } from './server.ts';
export type * from './types.ts';
