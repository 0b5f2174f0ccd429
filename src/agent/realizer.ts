/**
 * The agent's heavy side in one place (the seed's policy plugin on one node): the mirror of the
 * reflected keys, the pipeline scoped to the node, and the datapath. The agent hands it batches
 * of key changes; it brings the datapath to them, or says why it could not.
 *
 * What it guarantees the agent, which marks a revision realized only on its word:
 * - A batch is realized when every change in it reached the datapath. A datapath that refused
 *   leaves the pipeline ahead of it (`unrealized`): the next call realizes again, and changes
 *   given again are applied once (the mirror compares modification revisions).
 * - An unreadable value never throws here (the mirror keeps the key's last good version). Any
 *   other exception out of the mirror or the pipeline leaves them in doubt: the realizer says so
 *   (`RelistNeeded`) and rebuilds both from the next whole listing, realized as a first snapshot
 *   against what the datapath holds — which it keeps enforcing meanwhile.
 * - `reconcile` compares the datapath with what was realized and repairs any difference; it does
 *   nothing while the datapath is behind the pipeline (the retry brings it there).
 */
import { DataplaneError } from '../dataplane/index.ts';
import { PolicyPipeline } from '../pipeline/index.ts';
import type { KeyLayout } from '../reflected/index.ts';
import type { ClusterState } from '../state/index.ts';
import { ClusterMirror, type KeyChange, type UnreadableKey } from './mirror.ts';
import type { FlowBatch, RealizeResult, Realizer } from './types.ts';
import { attributeEvents, attributionContext, type AttributionContext } from '../flows/index.ts';
import type { NodeDatapath } from '../datapaths/types.ts';

interface RealizerOptions {
  readonly node: string;
  readonly layout: KeyLayout;
  readonly datapath: NodeDatapath;
  /** The store the datapath's renderer reads (the pipeline applies changes to it). */
  readonly state: ClusterState;
  /** Decode every NetworkPolicy, not only those of namespaces with a pod here (benchmarks). */
  readonly allPolicies?: boolean;
  /** As the datapath was opened with: the evaluator naming flows' rules must say the same. Default true. */
  readonly allowNodeLocal?: boolean;
}

/** Most unreadable keys a result lists (all are counted), and most it reports as found. */
const LISTED = 20;
const REPORTED = 100;

/** Thrown when the mirror or pipeline failed inside: give the realizer a whole listing next. */
class RelistNeeded extends Error {
  readonly relist = true;
}

export class NodeRealizer implements Realizer {
  private mirror: ClusterMirror;
  private readonly pipeline: PolicyPipeline;
  private first = true;
  private unrealized = false;
  private broken = false;
  private readonly listeners: ((why: string) => void)[] = [];
  /** Values found unreadable during the current call. */
  private found: UnreadableKey[] = [];
  /** The realized cluster, prepared for naming flows' rules; rebuilt after each realization. */
  private attribution: AttributionContext | undefined;

  constructor(private readonly options: RealizerOptions) {
    this.mirror = this.newMirror();
    this.pipeline = new PolicyPipeline({
      state: options.state,
      renderers: [options.datapath.renderer],
      node: options.node,
    });
  }

  get datapath(): string {
    return this.options.datapath.name;
  }

  async prepare(): Promise<string> {
    const line = await this.options.datapath.prepare();
    this.options.datapath.watch?.((why) => {
      for (const listener of this.listeners) listener(why);
    });
    return line;
  }

  onSuspect(listener: (why: string) => void): void {
    this.listeners.push(listener);
  }

  async realize(changes: readonly KeyChange[], relist: boolean): Promise<RealizeResult> {
    if (this.broken && !relist)
      throw new RelistNeeded('the mirror must be rebuilt from a whole listing after an internal error');
    const started = performance.now();
    if (this.broken) {
      this.mirror = this.newMirror();
      this.first = true;
      this.broken = false;
    }
    const first = this.first;
    this.found = [];
    try {
      const batch = relist ? this.mirror.relist(changes) : changes;
      const pipelineChanges = this.mirror.apply(batch);
      // From here the pipeline holds the new state, or part of it if it throws: the datapath is
      // behind it until a realization succeeds.
      this.unrealized = true;
      if (first) this.pipeline.apply({ type: 'resync', cluster: this.mirror.snapshot() });
      else if (pipelineChanges.length > 0) this.pipeline.applyBatch(pipelineChanges);
    } catch (error) {
      // A kernel target commits inside the pipeline: its refusal is the datapath's, retried as such.
      if (error instanceof DataplaneError) throw error;
      this.broken = true;
      throw new RelistNeeded(
        `internal error while applying the batch (${error instanceof Error ? error.message : String(error)}); rebuilding from a whole listing`,
      );
    }
    const rendered = performance.now();
    await this.options.datapath.realize(first);
    this.unrealized = false;
    this.first = false;
    this.attribution = undefined;
    const unreadable = this.mirror.unreadable();
    return {
      counts: this.options.datapath.counts(),
      unreadable: unreadable.slice(0, LISTED),
      unreadableCount: unreadable.length,
      found: this.found,
      pipelineMs: rendered - started,
      realizeMs: performance.now() - rendered,
      first,
    };
  }

  async reconcile(): Promise<readonly string[] | undefined> {
    if (this.first || this.unrealized || this.broken) return undefined;
    const differences = await this.options.datapath.verify();
    if (differences.length > 0) await this.options.datapath.repair();
    return differences;
  }

  /**
   * The datapath's verdict events since the last call, each named by the reference evaluator over
   * the cluster as last realized (the state the kernel enforces). Before the first realization
   * events are named over an empty cluster: no pod is known yet.
   */
  flows(): Promise<FlowBatch> {
    const { datapath } = this.options;
    const events = datapath.flows?.() ?? [];
    const lost = datapath.flowsLost?.() ?? 0;
    const pending = datapath.flowsPending?.() ?? false;
    if (events.length === 0) return Promise.resolve({ records: [], lost, pending });
    this.attribution ??= attributionContext(this.mirror.snapshot(), this.options.node, {
      allowNodeLocal: this.options.allowNodeLocal ?? true,
    });
    const context = this.attribution;
    return Promise.resolve({ records: attributeEvents(context, events), lost, pending });
  }

  cleanup(): Promise<string> {
    return this.options.datapath.cleanup();
  }

  close(): Promise<void> {
    return this.options.datapath.close();
  }

  private newMirror(): ClusterMirror {
    return new ClusterMirror({
      layout: this.options.layout,
      // A datapath of the whole cluster (Neutron) needs every policy, whatever runs on this node.
      ...(this.options.allPolicies || this.options.datapath.scope === 'cluster'
        ? {}
        : { node: this.options.node }),
      onUnreadable: (key) => {
        if (this.found.length < REPORTED) this.found.push(key);
      },
    });
  }
}

export type { UnreadableKey };
