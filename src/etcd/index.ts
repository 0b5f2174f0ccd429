/**
 * The etcd access layer's public entry: the store (lazily loads the etcd client), leader
 * election, and a real etcd process for tests, benchmarks and the lab.
 */
export { connectEtcd } from './client.ts';
export { ensureReachable, EtcdUnreachableError } from './reachable.ts';
export { campaign, type CampaignOptions } from './election.ts';
export { startEtcd, etcdBinary, freePort, type EtcdServer, type StartEtcdOptions } from './server.ts';
export type * from './types.ts';
