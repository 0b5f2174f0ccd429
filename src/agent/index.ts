/**
 * The node agent's public entry: the agent, its choice of datapath, its status in etcd, and its mirror of
 * the reflected objects. `run.ts` (etcd client, pino, prom-client) is loaded by the CLI only.
 */
export { NodeAgent } from './agent.ts';
export { NodeRealizer } from './realizer.ts';
export { isDatapathName, parsePodCidrs, DATAPATH_NAMES, type DatapathName } from './datapaths.ts';
export {
  readStatus,
  formatStatus,
  inTrouble,
  StatusKeys,
  type ClusterStatus,
  type NodeStatus,
} from './status.ts';
export {
  palisadeAuthPlan,
  sharedAgentAuthPlan,
  agentUser,
  READER_USER,
  REFLECTOR_USER,
  SHARED_AGENT_USER,
} from './etcd-roles.ts';
export { nodeName, NodeFactError } from './node-facts.ts';
export { ClusterMirror, type KeyChange, type UnreadableKey } from './mirror.ts';
export { serveHealth, type HealthServer } from './http.ts';
export type * from './types.ts';

import { etcdAccessError, EtcdAccessError, isEtcdClientError } from '../etcd/index.ts';
import type { EtcdConnection } from '../etcd/types.ts';
import type { AgentCommand, AgentIo } from './run.ts';
import type { ClusterStatus } from './status.ts';
export type { AgentCommand, AgentIo } from './run.ts';

/** Runs `palisade agent` (loads the etcd client, pino and prom-client on call). */
export async function runAgent(command: AgentCommand, io: AgentIo): Promise<number> {
  return (await import('./run.ts')).runAgent(command, io);
}

/** Reads every agent's status (loads the etcd client on call). */
export async function readClusterStatus(etcd: EtcdConnection, prefix: string): Promise<ClusterStatus> {
  return (await import('./run.ts')).readClusterStatus(etcd, prefix);
}

/**
 * An etcd failure as the one line a user reads — etcd not there, a TLS handshake or credentials
 * refused, a request this identity's role does not allow (an agent given another node's
 * certificate), an unreadable certificate — or undefined when the error is not etcd's.
 */
export function etcdFailureLine(error: unknown, endpoints: readonly string[]): string | undefined {
  if (error instanceof EtcdAccessError) return error.message;
  if (!isEtcdClientError(error)) return undefined;
  return etcdAccessError(error, endpoints, 'a request').message;
}
