/**
 * The agent's direct mode (`palisade agent --source kube`): the agent watches the Kubernetes API
 * itself instead of a reflector's etcd. Nothing of the path is new: the reflector — its
 * informers (list, then watch with bookmarks, 410 Gone relists, backoff), codec and writer —
 * writes into an in-process store (MemoryStore, etcd's data model without a server), and the node
 * agent lists and watches that store exactly as it would etcd. So both modes feed the same mirror,
 * pipeline and datapath with the same keys and values, which is what lets a test compare their
 * kernels.
 *
 * The first listing waits until every informer has listed once (`synced`): a snapshot made from
 * part of the cluster — pods before the policies that isolate them — would open what policy
 * closes. Until then the datapath holds what it prepared (fail closed, or a previous agent's).
 */
import { MemoryStore } from '../etcd/index.ts';
import type { EtcdStore } from '../etcd/types.ts';
import { connect, KubeApiError } from '../kube/index.ts';
import type { KubeApi, KubeconfigRequest } from '../kube/types.ts';
import type { KeyLayout } from '../reflected/index.ts';
import { Reflector } from '../reflector/index.ts';
import { NodeFactError, podCidrsOfNode } from './node-facts.ts';
import type { AgentLog, Upstream } from './types.ts';

/** Where an agent's objects come from, as its wiring (run.ts) uses it. */
export interface AgentSource {
  /** What the agent lists and watches. */
  readonly store: EtcdStore;
  /** The node's pod CIDRs: as given, or from its Node object. */
  readonly podCidrs: readonly string[];
  /** Resolves once the store holds the whole cluster (rejects if the source failed first). */
  synced(): Promise<void>;
  /** What feeds the store from beyond it, when something does (direct mode: the API server). */
  readonly upstream?: Upstream;
  close(): Promise<void>;
}

interface KubeSourceOptions {
  readonly request: KubeconfigRequest;
  readonly node: string;
  /** `--pod-cidr` values; empty: read them from the Node when `needsPodCidrs`. */
  readonly podCidrs: readonly string[];
  readonly needsPodCidrs: boolean;
  readonly layout: KeyLayout;
  readonly log: AgentLog;
  /** An API client already made (tests); default: `connect(request)`. */
  readonly api?: KubeApi;
}

/** The Node's pod CIDRs through the API (reflected mode: the agent reads nothing else there). */
export async function podCidrsFromNode(
  request: KubeconfigRequest,
  node: string,
  log: AgentLog,
): Promise<string[]> {
  return apiFacts(async () => readPodCidrs(await connect(request), node, log));
}

/** Reads the Node's pod CIDRs and says where they came from. */
async function readPodCidrs(api: KubeApi, node: string, log: AgentLog): Promise<string[]> {
  const podCidrs = await podCidrsOfNode(api, node);
  log.info({ podCidrs }, `pod CIDRs from Node ${node}: ${podCidrs.join(', ')}`);
  return podCidrs;
}

/** Runs `read`, turning an API failure into the one line a NodeFactError carries. */
async function apiFacts<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof KubeApiError) throw new NodeFactError(error.message);
    throw error;
  }
}

/**
 * Connects to the API server, finds the node's pod CIDRs and starts the informers. A failure to
 * reach the API or read the Node is a NodeFactError (one line).
 */
export async function openKubeSource(options: KubeSourceOptions): Promise<AgentSource> {
  const { log, node } = options;
  const api = await apiFacts(async () => options.api ?? (await connect(options.request)));
  const podCidrs =
    options.podCidrs.length === 0 && options.needsPodCidrs
      ? await apiFacts(() => readPodCidrs(api, node, log))
      : options.podCidrs;
  log.info(
    { server: api.target.server, context: api.target.context },
    `watching the Kubernetes API at ${api.target.server} (${api.target.source})`,
  );
  const store = new MemoryStore();
  // Streams whose last request failed, and since when: the agent is stale once one stays failed.
  const failing = new Map<string, number>();
  const upstream: Upstream = {
    what: 'the Kubernetes API',
    failingSince: () => (failing.size === 0 ? undefined : Math.min(...failing.values())),
  };
  let syncedOnce: () => void = () => undefined;
  const synced = new Promise<void>((resolve) => (syncedOnce = resolve));
  const reflector = new Reflector({
    store,
    layout: options.layout,
    source: {
      type: 'api',
      api,
      scope: { all: true },
      encodeThreads: 0,
      health: (stream, failure) => {
        if (failure === undefined) failing.delete(stream);
        else if (!failing.has(stream)) failing.set(stream, Date.now());
      },
    },
    elect: false,
    id: `agent-${node}`,
    log: (line) => log.info({ source: 'kube' }, line),
    onDiagnostics: (diagnostics) => {
      for (const d of diagnostics)
        if (d.severity === 'error')
          log.warn({ source: 'kube', code: d.code }, `${d.file}: ${d.message} (not enforced)`);
    },
    onSynced: () => syncedOnce(),
  });
  const running = reflector.run();
  // A reflector that ends before it synced (discovery refused, say) fails the wait for it.
  const failed = running.then(
    () => {
      throw new NodeFactError('the Kubernetes API source stopped before it listed the cluster');
    },
    (error: unknown) => {
      throw error instanceof KubeApiError ? new NodeFactError(error.message) : error;
    },
  );
  failed.catch(() => undefined);
  return {
    store,
    podCidrs,
    synced: () => Promise.race([synced, failed]),
    upstream,
    close: async () => {
      reflector.stop({ now: true });
      await running.catch(() => undefined);
      store.close();
    },
  };
}
