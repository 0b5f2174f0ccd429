/**
 * `palisade agent` and `palisade status` wired to their outside world: the etcd client, pino
 * logs, prom-client metrics and the health server. The CLI imports this module lazily, so
 * `palisade --version` never loads etcd, pino or prom-client.
 */
import { pino } from 'pino';
import { connectEtcd, ensureReachable, EtcdUnreachableError, MemoryStore } from '../etcd/index.ts';
import type { EtcdConnection } from '../etcd/types.ts';
import type { KubeconfigRequest } from '../kube/types.ts';
import { KeyLayout } from '../reflected/index.ts';
import { ClusterState } from '../state/index.ts';
import { NodeAgent } from './agent.ts';
import { NodeRealizer } from './realizer.ts';
import { parsePodCidrs, type DatapathName } from './datapaths.ts';
import {
  isClusterWideDatapath,
  lockForProcess,
  openNodeDatapath,
  type NeutronConnection,
} from '../datapaths/index.ts';
import { ControllerElection } from './leadership.ts';
import type { HeldLock } from '../dataplane/index.ts';
import type { Realizer } from './types.ts';
import { realizerWorkerScript, WorkerRealizer } from './worker-realizer.ts';
import { serveHealth, type HealthServer } from './http.ts';
import { startFlowFeed } from './flow-feed.ts';
import { FlowTable } from '../flows/index.ts';
import { PromMetrics } from './metrics.ts';
import { formatStatus, readStatus, StatusKeys, type ClusterStatus } from './status.ts';
import { openKubeSource, podCidrsFromNode, type AgentSource } from './kube-source.ts';
import type { AgentLog } from './types.ts';

export interface AgentCommand {
  readonly node: string;
  /**
   * Where the cluster comes from: a reflector's etcd (`etcd`), or the Kubernetes API watched by
   * the agent itself (`kube`, direct mode; kube-source.ts). Default `etcd`.
   */
  readonly source?: 'etcd' | 'kube';
  /** etcd's endpoints, TLS files and user (the CLI's --etcd… options); required with `source: etcd`. */
  readonly etcd?: EtcdConnection;
  /** Direct mode: how to find the API server (kubeconfig, context; in a pod, its service account). */
  readonly kube?: KubeconfigRequest;
  readonly datapath: DatapathName;
  readonly prefix: string;
  readonly netns?: string;
  /** The node's pod CIDRs, as given (checked by `parsePodCidrs`). */
  readonly podCidrs: readonly string[];
  /** Where locks and state live (default /run/palisade). */
  readonly runDir: string;
  /** How often the datapath is verified against what was realized, ms (0: only on notifications). */
  readonly verifyIntervalMs: number;
  /** Realize in the agent's own thread instead of a worker (tests, debugging). */
  readonly inProcess?: boolean;
  readonly allowNodeLocal: boolean;
  /** eBPF: deliver packets between two pods of the node directly (default true). */
  readonly directDelivery?: boolean;
  /** `host:port` (or a Unix socket's absolute path as host) for /healthz, /readyz, /metrics, /flows; undefined: none. */
  readonly listen?: { readonly host: string; readonly port: number };
  /** Report new connections' verdicts (`/flows`, palisade_policy_verdicts_total). Default false. */
  readonly flowLog?: boolean;
  /** Most flow records kept (default 10,000). */
  readonly flowCapacity?: number;
  readonly logLevel: string;
  readonly leaseTtlSeconds: number;
  readonly statusIntervalMs: number;
  readonly maxTxnOps: number;
  readonly vppAgentLabel?: string;
  readonly vppAgentPrefix?: string;
  /** --datapath neutron: the Neutron API. */
  readonly neutron?: NeutronConnection;
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
  const layout = new KeyLayout(command.prefix);
  const source = await openSource(command, layout, log);
  const store = source.store;
  const context = {
    node: command.node,
    ...(command.netns !== undefined ? { netns: command.netns } : {}),
    podCidrs: source.podCidrs,
    allowNodeLocal: command.allowNodeLocal,
    ...(command.directDelivery === false ? { directDelivery: false } : {}),
    runDir: command.runDir,
    ...(command.vppAgentLabel !== undefined ? { vppAgentLabel: command.vppAgentLabel } : {}),
    ...(command.vppAgentPrefix !== undefined ? { vppAgentPrefix: command.vppAgentPrefix } : {}),
    maxTxnOps: command.maxTxnOps,
    ...(command.neutron ? { neutron: command.neutron } : {}),
    ...(command.flowLog ? { flowLog: true } : {}),
  };
  /** The datapath in this thread (cleanup, or no worker module beside this one). */
  const local = (state: ClusterState, lockHeld: boolean) =>
    openNodeDatapath(command.datapath, {
      ...context,
      podCidrs: parsePodCidrs(source.podCidrs),
      state,
      store,
      lockHeld,
    });
  let lock: HeldLock | undefined;
  try {
    if (command.cleanup) {
      const datapath = await local(new ClusterState(), false);
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
    // The process holds the datapath's lock; its realizer (mirror, pipeline, datapath) runs in a
    // worker thread, so that heavy work never holds this thread's etcd, lease and health.
    lock = lockForProcess(command.datapath, context);
    const script = command.inProcess ? undefined : realizerWorkerScript();
    let realizer: Realizer;
    if (script) {
      realizer = new WorkerRealizer(script, {
        datapath: command.datapath,
        prefix: command.prefix,
        // Direct mode runs no document datapath (the CLI refuses it): its worker never connects.
        etcd: command.etcd ?? { endpoints: [] },
        context,
      });
    } else {
      if (!command.inProcess)
        log.warn({}, "the realizer's worker module is not installed: realizing in the agent's own thread");
      const state = new ClusterState();
      realizer = new NodeRealizer({ node: command.node, layout, datapath: await local(state, true), state });
    }
    const metrics = new PromMetrics({ node: command.node, datapath: command.datapath });
    const agent = new NodeAgent({
      node: command.node,
      store,
      layout,
      realizer,
      verifyIntervalMs: command.verifyIntervalMs,
      version: command.version,
      log,
      metrics,
      leaseTtlSeconds: command.leaseTtlSeconds,
      statusIntervalMs: command.statusIntervalMs,
      sourceSynced: () => source.synced(),
      ...(source.upstream ? { upstream: source.upstream } : {}),
    });
    // A datapath written once for the cluster has one writer: its controllers elect it.
    const election = isClusterWideDatapath(command.datapath)
      ? new ControllerElection({
          store,
          key: layout.controllerLeader(command.datapath),
          id: command.node,
          ttlSeconds: command.leaseTtlSeconds,
          log,
        })
      : undefined;
    const flows = command.flowLog ? new FlowTable(command.flowCapacity) : undefined;
    const feed = flows
      ? startFlowFeed({
          realizer,
          table: flows,
          log,
          onBatch: (records, lost) => metrics.flowsSeen(records, flows.stats(), lost),
        })
      : undefined;
    let health: HealthServer | undefined;
    try {
      health = command.listen
        ? await serveHealth(
            {
              get state() {
                return agent.state;
              },
              exposeMetrics: () => metrics.expose(),
              ...(flows ? { flows } : {}),
              get standingBy() {
                return election?.standingBy;
              },
            },
            command.listen.host,
            command.listen.port,
          )
        : undefined;
    } catch (error) {
      // Nothing has started yet: the realizer's thread and the feed must not keep the process up.
      await feed?.stop();
      await realizer.close();
      throw error;
    }
    let stopping = false;
    let started = false;
    let leadershipLost = false;
    const stop = (signal: string): void => {
      log.info({ signal }, 'stopping: finishing the current transaction');
      stopping = true;
      election?.abandon();
      // A stop while start() waits for the source to sync ends that wait (start() then returns).
      if (!started && command.source === 'kube') void source.close();
      void agent.stop();
    };
    const onTerm = (): void => stop('SIGTERM');
    const onInt = (): void => stop('SIGINT');
    process.once('SIGTERM', onTerm);
    process.once('SIGINT', onInt);
    try {
      if (health) log.info({ url: health.url }, `serving /healthz /readyz /metrics${flows ? ' /flows' : ''}`);
      const leading =
        !election ||
        (await election.win((reason) => {
          leadershipLost = true;
          stop(`leadership lost (${reason})`);
        }));
      if (leading && !stopping) {
        try {
          await agent.start();
          started = true;
        } catch (error) {
          if (!stopping) throw error;
        }
        io.onStarted?.(health?.url);
        await agent.stoppedPromise();
      }
    } finally {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      await health?.close();
      await feed?.stop();
      await agent.stop();
      if (!leadershipLost) await election?.resign();
    }
    // Lost leadership: non-zero, so the supervisor starts it again as a candidate.
    return leadershipLost ? 1 : 0;
  } finally {
    lock?.release();
    await source.close();
  }
}

/**
 * The agent's source: etcd (reached within 30 s, or one line), or in direct mode the
 * Kubernetes API into an in-process store. `--cleanup` in direct mode reaches nothing.
 */
async function openSource(command: AgentCommand, layout: KeyLayout, log: AgentLog): Promise<AgentSource> {
  const none = (): Promise<void> => Promise.resolve();
  if (command.source === 'kube') {
    if (command.cleanup) {
      const store = new MemoryStore();
      return { store, podCidrs: command.podCidrs, synced: none, close: () => Promise.resolve(store.close()) };
    }
    return openKubeSource({
      request: command.kube ?? { env: process.env },
      node: command.node,
      podCidrs: command.podCidrs,
      needsPodCidrs: needsPodCidrs(command),
      layout,
      log,
    });
  }
  if (!command.etcd) throw new Error('the etcd source needs a connection');
  // A reflected-mode agent in a pod (or given --kubeconfig) still finds its pod CIDRs on its Node.
  const kube = command.kube;
  const podCidrs =
    command.podCidrs.length === 0 &&
    needsPodCidrs(command) &&
    kube &&
    (kube.kubeconfig !== undefined || kube.env.KUBERNETES_SERVICE_HOST)
      ? await podCidrsFromNode(kube, command.node, log)
      : command.podCidrs;
  const store = await connectEtcd(command.etcd);
  try {
    // A daemon restarted into a slow moment (an etcd busy compacting, a loaded node) waits longer
    // than a command would before giving up: exiting only trades the wait for a restart backoff.
    await ensureReachable(store, command.etcd.endpoints, layout.leader, AGENT_REACHES_ETCD_MS);
  } catch (error) {
    store.close();
    throw error;
  }
  return { store, podCidrs, synced: none, close: () => Promise.resolve(store.close()) };
}

/** How long the agent waits at start for etcd's first answer (refusals — TLS, credentials — end it at once). */
const AGENT_REACHES_ETCD_MS = 30_000;

/** Reads every agent's status once. */
export async function readClusterStatus(etcd: EtcdConnection, prefix: string): Promise<ClusterStatus> {
  const store = await connectEtcd(etcd);
  try {
    const layout = new KeyLayout(prefix);
    await ensureReachable(store, etcd.endpoints, layout.leader);
    return await readStatus(store, layout);
  } finally {
    store.close();
  }
}

export { formatStatus, EtcdUnreachableError };

/** The kernel datapaths fail closed on the node's pod CIDRs; the others do not use them. */
function needsPodCidrs(command: AgentCommand): boolean {
  return command.datapath === 'nftables' || command.datapath === 'ebpf';
}
