/**
 * The compiled path wired together: the store, the processor deciding which pods are stale,
 * the configurator computing their tables, and renderers realizing them in one transaction per
 * batch of changes. Node-scoped like the agent when `node` is given: only that node's pods are
 * compiled and rendered. This is wiring shared by the CLI, the agent and the benchmarks.
 */
import type { Endpoint } from '../model/types.ts';
import { Configurator, type PodTables } from '../configurator/index.ts';
import { affectedPods } from '../processor/index.ts';
import { ClusterState, type StateDelta } from '../state/index.ts';
import type { Renderer } from '../datapaths/index.ts';
import type { ApplyResult, PipelineChange } from './types.ts';

interface PipelineOptions {
  /** Compile and render only this node's pods. */
  readonly node?: string;
  readonly renderers?: readonly Renderer[];
  /** The store to use (renderers that resolve groups need it before the pipeline exists). */
  readonly state?: ClusterState;
  /** NetworkPolicy lets an isolated pod talk with its own node (default true; see ConfiguratorOptions). */
  readonly allowNodeLocal?: boolean;
}

export class PolicyPipeline {
  readonly state: ClusterState;
  private readonly configurator: Configurator;
  private readonly tables = new Map<string, PodTables>();
  /** Pods the renderers currently know. */
  private readonly rendered = new Set<string>();
  private readonly renderers: readonly Renderer[];
  /** False when every renderer reads the store rather than tables: nothing to compile. */
  private readonly compiles: boolean;

  constructor(private readonly options: PipelineOptions = {}) {
    this.state = options.state ?? new ClusterState();
    this.configurator = new Configurator(
      this.state,
      options.allowNodeLocal !== undefined ? { allowNodeLocal: options.allowNodeLocal } : {},
    );
    this.renderers = options.renderers ?? [];
    this.compiles = this.renderers.length === 0 || this.renderers.some((r) => r.reads === 'tables');
  }

  /** The last compiled tables of a pod (undefined: not compiled, e.g. another node's). */
  tablesOf(pod: string): PodTables | undefined {
    return this.tables.get(pod);
  }

  compiledPods(): IterableIterator<[string, PodTables]> {
    return this.tables.entries();
  }

  /** Pods known but not compiled for lack of an address. */
  postponed(): string[] {
    return [...this.state.allPods()]
      .filter((p) => this.inScope(p) && p.ips.length === 0 && !p.hostNetwork)
      .map((p) => p.id);
  }

  apply(change: PipelineChange): ApplyResult {
    return this.applyBatch([change]);
  }

  /** Applies changes to the store one by one, then recomputes and renders once. */
  applyBatch(changes: readonly PipelineChange[]): ApplyResult {
    const affected = new Set<string>();
    const groups = new Set<string>();
    const members = new Set<string>();
    let resync = false;
    let revision = this.state.revision;
    for (const change of changes) {
      const delta = this.applyToState(change);
      revision = delta.revision;
      resync ||= delta.resync;
      for (const id of affectedPods(this.state, delta)) affected.add(id);
      for (const group of delta.groups) groups.add(group);
      for (const pod of delta.members) members.add(pod);
    }
    if (resync) this.configurator.clearMemo();
    const txns = this.renderers.map((r) => ({ renderer: r, txn: r.newTxn({ resync }) }));
    if (resync) this.rendered.clear();
    let compiled = 0;
    for (const id of affected) {
      const pod = this.state.pod(id);
      const tables = pod && this.compiles && this.inScope(pod) ? this.configurator.compile(pod) : undefined;
      this.record(id, pod, tables);
      if (tables) compiled++;
      const renderable = pod !== undefined && this.inScope(pod) && !pod.hostNetwork;
      // Renderers hear about a pod while it is theirs, and once more when it stops being theirs.
      if (!renderable && !this.rendered.has(id)) continue;
      for (const { txn } of txns) {
        if (renderable) txn.render({ id, ips: pod.ips, ...(pod.node ? { node: pod.node } : {}) }, tables);
        else txn.render({ id, ips: [] }, undefined);
      }
      if (renderable) this.rendered.add(id);
      else this.rendered.delete(id);
    }
    for (const { txn } of txns) if (groups.size > 0) txn.groupsChanged?.(groups, members);
    const results = new Map<string, unknown>();
    for (const { renderer, txn } of txns) {
      results.set(renderer.name, txn.changes());
      txn.commit();
    }
    return { revision, affected: compiled, changes: results };
  }

  private inScope(pod: Endpoint): boolean {
    return this.options.node === undefined || pod.node === this.options.node;
  }

  /** Remembers a pod's last compiled tables. */
  private record(id: string, pod: Endpoint | undefined, tables: PodTables | undefined): void {
    if (pod && tables && this.inScope(pod) && pod.ips.length > 0 && !pod.hostNetwork)
      this.tables.set(id, tables);
    else this.tables.delete(id);
  }

  private applyToState(change: PipelineChange): StateDelta {
    switch (change.type) {
      case 'resync':
        return this.state.resync(change.cluster);
      case 'upsert-namespace':
        return this.state.upsertNamespace(change.namespace);
      case 'delete-namespace':
        return this.state.deleteNamespace(change.name);
      case 'upsert-pod':
        return this.state.upsertPod(change.pod);
      case 'delete-pod':
        return this.state.deletePod(change.id);
      case 'upsert-policy':
        return this.state.upsertPolicy(change.policy);
      case 'delete-policy':
        return this.state.deletePolicy(change.key);
      case 'upsert-cluster-policy':
        return this.state.upsertClusterPolicy(change.policy);
      case 'delete-cluster-policy':
        return this.state.deleteClusterPolicy(change.key);
      case 'upsert-node':
        return this.state.upsertNode(change.node);
      case 'delete-node':
        return this.state.deleteNode(change.name);
    }
  }
}
