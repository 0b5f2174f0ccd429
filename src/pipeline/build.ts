/**
 * The compiled path for one snapshot of a cluster, built in one call: a fresh store, the
 * renderers made over it (they read its groups, so they exist before the pipeline), and the
 * pipeline scoped to a node when asked, resynced to the cluster. Render targets go through
 * `renderCluster`: one instance per node for node targets, one for the whole cluster otherwise.
 * Every one-shot consumer (the CLI's compile and render, tests, benchmarks) uses these; a
 * long-running agent builds the same three pieces and keeps feeding the pipeline.
 */
import type { Cluster } from '../model/types.ts';
import { ClusterState, type CompilingStore } from '../state/index.ts';
import type {
  Renderer,
  Rendered,
  TargetImplementation,
  TargetInstance,
  TargetOptions,
} from '../datapaths/index.ts';
import { PolicyPipeline } from './pipeline.ts';

interface CompileRequest {
  /** Compile and render only this node's pods. */
  readonly node?: string;
  /** The renderers, made over the store the pipeline will use. */
  readonly renderers?: (store: CompilingStore) => readonly Renderer[];
  /** NetworkPolicy lets an isolated pod talk with its own node (default true). */
  readonly allowNodeLocal?: boolean;
}

/** A pipeline over a fresh store, resynced to `cluster`. */
export function compileCluster(cluster: Cluster, request: CompileRequest = {}): PolicyPipeline {
  const state = new ClusterState();
  const renderers = request.renderers?.(state) ?? [];
  const pipeline = new PolicyPipeline({
    state,
    renderers,
    ...(request.node !== undefined ? { node: request.node } : {}),
    ...(request.allowNodeLocal !== undefined ? { allowNodeLocal: request.allowNodeLocal } : {}),
  });
  pipeline.apply({ type: 'resync', cluster });
  return pipeline;
}

interface TargetRequest {
  /** Node targets: the node to render (default: every node that has pods, if the target allows). Cluster targets: passed on (e.g. to narrow what is printed). */
  readonly node?: string;
  readonly options?: TargetOptions;
}

/** One target instance over a fresh store, resynced to `cluster` (node targets: scoped to the node). */
export function buildTarget<Output>(
  target: TargetImplementation<Output>,
  cluster: Cluster,
  request: TargetRequest = {},
): { readonly instance: TargetInstance<Output>; readonly pipeline: PolicyPipeline } {
  let instance: TargetInstance<Output> | undefined;
  const context = {
    ...(request.node !== undefined ? { node: request.node } : {}),
    options: request.options ?? {},
  };
  const pipeline = compileCluster(cluster, {
    ...(target.capabilities.scope === 'node' && request.node !== undefined ? { node: request.node } : {}),
    ...(request.options?.allowNodeLocal !== undefined
      ? { allowNodeLocal: request.options.allowNodeLocal }
      : {}),
    renderers: (store) => {
      instance = target.create(store, context);
      return [instance.renderer];
    },
  });
  if (!instance) throw new Error('unreachable: the pipeline made no target instance');
  return { instance, pipeline };
}

/**
 * A target's outputs for a cluster: node targets one per node (the given one, or every node
 * that has pods, sorted), cluster targets one.
 */
export function renderCluster<Output>(
  target: TargetImplementation<Output>,
  cluster: Cluster,
  request: TargetRequest = {},
): Rendered<Output>[] {
  if (target.capabilities.scope === 'cluster' || request.node !== undefined) {
    const { instance } = buildTarget(target, cluster, request);
    return [{ ...(request.node !== undefined ? { node: request.node } : {}), output: instance.output() }];
  }
  if (target.capabilities.nodeRequired) throw new Error('this target renders one node: name it');
  return nodesWithPods(cluster).map((node) => ({
    node,
    output: buildTarget(target, cluster, { ...request, node }).instance.output(),
  }));
}

/** Nodes that run a pod of the cluster, sorted. */
export function nodesWithPods(cluster: Cluster): string[] {
  return [...new Set(cluster.endpoints.flatMap((e) => (e.node ? [e.node] : [])))].sort();
}
