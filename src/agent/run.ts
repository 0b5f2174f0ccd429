/**
 * `palisade agent` and `palisade status` wired to their outside world: the etcd client, pino
 * logs, prom-client metrics and the health server. The CLI imports this module lazily, so
 * `palisade --version` never loads etcd, pino or prom-client.
 */
import { pino } from 'pino';
import { connectEtcd, ensureReachable, EtcdUnreachableError } from '../etcd/index.ts';
import { KeyLayout } from '../reflector/index.ts';
import { ClusterState } from '../state/index.ts';
import { NodeAgent } from './agent.ts';
import { NodeRealizer } from './realizer.ts';
import { createDatapath, type DatapathName } from './datapaths.ts';
import { serveHealth } from './http.ts';
import { PromMetrics } from './metrics.ts';
import { formatStatus, readStatus, StatusKeys, type ClusterStatus } from './status.ts';
import type { Cidr } from '../net/ip.ts';

export interface AgentCommand {
  readonly node: string;
  readonly endpoints: readonly string[];
  readonly datapath: DatapathName;
  readonly prefix: string;
  readonly netns?: string;
  readonly podCidrs: readonly Cidr[];
  readonly allowNodeLocal: boolean;
  /** `host:port` for /healthz, /readyz, /metrics; undefined: none. */
  readonly listen?: { readonly host: string; readonly port: number };
  readonly logLevel: string;
  readonly leaseTtlSeconds: number;
  readonly statusIntervalMs: number;
  readonly maxTxnOps: number;
  readonly vppAgentLabel?: string;
  readonly vppAgentPrefix?: string;
  readonly version: string;
  readonly cleanup: boolean;
}

/** Where the agent writes: pino's JSON lines go to `out`. */
export interface AgentIo {
  readonly out: { write(chunk: string): unknown };
  /** Called once the agent runs (the health server's URL, when any). */
  readonly onStarted?: (url: string | undefined) => void;
}

/** Runs an agent until SIGTERM or SIGINT; returns the exit code. */
export async function runAgent(command: AgentCommand, io: AgentIo): Promise<number> {
  const log = pino(
    {
      level: command.logLevel,
      base: { node: command.node, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    { write: (line: string) => void io.out.write(line) },
  );
  const store = await connectEtcd([...command.endpoints]);
  const layout = new KeyLayout(command.prefix);
  const state = new ClusterState();
  try {
    await ensureReachable(store, command.endpoints, layout.leader);
    const datapath = await createDatapath(command.datapath, {
      node: command.node,
      state,
      store,
      ...(command.netns !== undefined ? { netns: command.netns } : {}),
      podCidrs: command.podCidrs,
      allowNodeLocal: command.allowNodeLocal,
      ...(command.vppAgentLabel !== undefined ? { vppAgentLabel: command.vppAgentLabel } : {}),
      ...(command.vppAgentPrefix !== undefined ? { vppAgentPrefix: command.vppAgentPrefix } : {}),
      maxTxnOps: command.maxTxnOps,
    });
    if (command.cleanup) {
      try {
        const removed = await datapath.cleanup();
        const keys = new StatusKeys(layout);
        await store.txn(
          [],
          [
            { type: 'delete', key: keys.node(command.node) },
            { type: 'delete', key: keys.agent(command.node) },
          ],
        );
        log.info({}, `${removed}; removed the node's status keys`);
      } finally {
        await datapath.close();
      }
      return 0;
    }
    const metrics = new PromMetrics({ node: command.node, datapath: command.datapath });
    const agent = new NodeAgent({
      node: command.node,
      store,
      layout,
      realizer: new NodeRealizer({ node: command.node, layout, datapath, state }),
      version: command.version,
      log,
      metrics,
      leaseTtlSeconds: command.leaseTtlSeconds,
      statusIntervalMs: command.statusIntervalMs,
    });
    const health = command.listen
      ? await serveHealth(
          {
            get state() {
              return agent.state;
            },
            exposeMetrics: () => metrics.expose(),
          },
          command.listen.host,
          command.listen.port,
        )
      : undefined;
    const stop = (signal: string): void => {
      log.info({ signal }, 'stopping: finishing the current transaction');
      void agent.stop();
    };
    const onTerm = (): void => stop('SIGTERM');
    const onInt = (): void => stop('SIGINT');
    process.once('SIGTERM', onTerm);
    process.once('SIGINT', onInt);
    try {
      if (health) log.info({ url: health.url }, 'serving /healthz /readyz /metrics');
      await agent.start();
      io.onStarted?.(health?.url);
      await agent.stoppedPromise();
    } finally {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      await health?.close();
      await agent.stop();
    }
    return 0;
  } finally {
    store.close();
  }
}

/** Reads every agent's status once. */
export async function readClusterStatus(
  endpoints: readonly string[],
  prefix: string,
): Promise<ClusterStatus> {
  const store = await connectEtcd([...endpoints]);
  try {
    const layout = new KeyLayout(prefix);
    await ensureReachable(store, endpoints, layout.leader);
    return await readStatus(store, layout);
  } finally {
    store.close();
  }
}

export { formatStatus, EtcdUnreachableError };
