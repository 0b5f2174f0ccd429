/**
 * The lab: a mini cluster built from manifests in network namespaces, enforced by the nftables
 * renderer in each node's namespace — the agent's code path — and probed with real packets.
 *
 * `Lab.up` plans, builds the network, starts one agent per pod and applies policy; `Lab.attach`
 * re-opens a running lab from its state file (the cluster it runs, as plain objects) and reads
 * back what each node's kernel table holds, so that `apply` sends the difference between that and
 * the new policy; `down` removes what `up` created, found through the state file.
 *
 * Recovery (docs/ARCHITECTURE.md, "Recovery guarantees"): every command holds the lab's lock;
 * the state file records the policy the user asked for, written atomically before any node is
 * touched; the kernel is the truth of what is enforced and is read back, never assumed; a failed
 * apply is rolled back on every node and the rollback checked.
 */
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { loadFromObjects } from '../ingest/index.ts';
import { manifestKind, policyEngine } from '../model/cluster-policy.ts';
import { CLASSIFIER_ENGINE_REFUSAL } from '../datapaths/types.ts';
import type { Cluster } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { changesBetween, PolicyPipeline, type PipelineChange } from '../pipeline/index.ts';
import { ClusterState } from '../state/index.ts';
import { acquireDatapathLock, DataplaneError, type HeldLock } from '../dataplane/index.ts';
import type { AgentClient } from './agent-client.ts';
import { applyObjects } from './apply-objects.ts';
import { datapathModule, type DatapathKind } from './datapath.ts';
import type { FleetBackend, FleetDatapath } from '../datapaths/types.ts';
import {
  checkLabName,
  planNewLab,
  ensureDir,
  labPaths,
  locked,
  readStateFile,
  requireRoot,
  takeLock,
  writeStateFile,
  type LabLocation,
} from './lab-files.ts';
import {
  connectOrClose,
  removeLabParts,
  throwIfNotFullyDown,
  withTeardownProblems,
  type PodAgentRecord,
} from './lab-lifecycle.ts';
import { createNetwork, namespacesOf } from './network.ts';
import { connectPodAgents, podClient, podClients, startAgents } from './pod-agents.ts';
import { familyOf, LabError, podObjects, type LabPlan } from './topology.ts';
export { DEFAULT_STATE_ROOT, hasControlPlane, requireRoot } from './lab-files.ts';

export interface LabOptions extends LabLocation {
  /** Nodes to spread pods over when manifests name none. Default 2. */
  readonly nodes?: number;
  /** Node-to-own-pod traffic bypasses policy (the reference's default). Default true. */
  readonly allowNodeLocal?: boolean;
  /** Cut tracked flows that an update denies (at their next packet). Default true. */
  readonly killDenied?: boolean;
  /** What enforces policy on the nodes: nftables (default) or the eBPF programs. */
  readonly datapath?: DatapathKind;
}

interface LabState {
  readonly version: 1;
  readonly plan: LabPlan;
  /** The lab's cluster: namespaces and policies as given, one Pod per lab pod. */
  readonly objects: readonly object[];
  readonly agents: readonly PodAgentRecord[];
  readonly allowNodeLocal: boolean;
  readonly killDenied: boolean;
  /** Absent in labs made before the choice existed: nftables. */
  readonly datapath?: DatapathKind;
}

export interface ApplyReport {
  readonly datapath: DatapathKind;
  readonly changes: number;
  /** Operations in the transaction, per node ('whole table' when it was replaced whole). */
  readonly operations: ReadonlyMap<string, number | 'whole table'>;
  readonly millis: number;
  readonly notes: readonly string[];
}

export class Lab {
  /** Nodes whose kernel table differed from the lab's policy when this process attached. */
  readonly drift: { readonly node: string; readonly pending: number | 'replace' }[] = [];

  private constructor(
    private state: LabState,
    private readonly dir: string,
    private readonly options: LabLocation,
    private cluster: Cluster,
    private readonly pipeline: PolicyPipeline,
    private readonly datapath: FleetDatapath,
    private readonly clients: ReadonlyMap<string, AgentClient>,
  ) {}

  get plan(): LabPlan {
    return this.state.plan;
  }

  /** What enforces the lab's policy. */
  get datapathKind(): DatapathKind {
    // The fleet was loaded by this kind's name (datapathModule), and says so.
    return this.datapath.kind as DatapathKind;
  }

  /** The cluster the lab runs (its pods with their lab addresses and nodes). */
  get current(): Cluster {
    return this.cluster;
  }

  agent(pod: string): AgentClient {
    return podClient(this.clients, pod, this.plan.name);
  }

  /**
   * Builds the lab from objects (Namespaces, NetworkPolicies, Pods, workloads) and the cluster
   * they load as. Policy is enforced before any agent listens.
   */
  static async up(
    name: string,
    objects: readonly object[],
    cluster: Cluster,
    options: LabOptions = {},
  ): Promise<Lab> {
    checkLabName(name);
    const { dir } = labPaths(name, options.stateRoot);
    const datapath = options.datapath ?? 'nftables';
    const module = await datapathModule(datapath);
    const lock = takeLock(name, options);
    const nodeLocks: HeldLock[] = [];
    try {
      const plan = planNewLab(name, dir, cluster, options.nodes);
      for (const node of plan.nodes)
        nodeLocks.push(
          acquireDatapathLock(node.netns, options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
        );
      let state: LabState = {
        version: 1,
        plan,
        objects: asRecorded(labObjects(objects, plan)),
        agents: [],
        allowNodeLocal: options.allowNodeLocal ?? true,
        killDenied: options.killDenied ?? true,
        ...(datapath !== 'nftables' ? { datapath } : {}),
      };
      ensureDir(dir);
      // Written first, so that `down` can clean up after a failed `up`.
      writeState(dir, state);
      try {
        await createNetwork(plan);
        const lab = Lab.assemble(state, dir, options, false, module);
        state = { ...state, agents: startAgents(plan, dir) };
        writeState(dir, state);
        lab.state = state;
        await connectPodAgents(plan, lab.clients);
        return lab;
      } catch (error) {
        throw withTeardownProblems(error, await Lab.teardown(name, dir, module));
      }
    } finally {
      for (const held of nodeLocks) held.release();
      lock.release();
    }
  }

  /**
   * Re-opens a running lab: rebuilds its policy from the state file and reads back each node's
   * table, so the next apply sends what differs from what the kernel really holds. Nodes whose
   * table differs from the recorded policy are listed in `drift`.
   */
  static async attach(name: string, options: LabLocation = {}): Promise<Lab> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const module = await datapathModule(readState(dir, name).datapath ?? 'nftables');
    const lab = locked(name, options, () => Lab.assemble(readState(dir, name), dir, options, true, module));
    return connectOrClose(lab, lab.plan, lab.clients);
  }

  /**
   * Removes everything the lab created: agents, namespaces (and their links), state. What could
   * not be removed is reported (after trying the rest); what was already gone is not a problem.
   */
  static async down(name: string, options: LabLocation = {}): Promise<{ namespaces: number }> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const module = await datapathModule(readState(dir, name).datapath ?? 'nftables');
    return locked(name, options, async () => {
      const state = readState(dir, name);
      throwIfNotFullyDown(name, await Lab.teardown(name, dir, module, state));
      return { namespaces: namespacesOf(state.plan).length };
    });
  }

  /** Stops agents, deletes namespaces, the datapath's pins and the state directory; returns what failed. */
  private static async teardown(
    name: string,
    dir: string,
    module: FleetBackend,
    known?: LabState,
  ): Promise<string[]> {
    const problems: string[] = [];
    let state = known;
    if (!state)
      try {
        state = readState(dir, name);
      } catch (error) {
        problems.push(String((error as Error).message));
      }
    const lab = state && { plan: state.plan, podAgents: state.agents };
    problems.push(...(await removeLabParts(dir, lab, (plan) => module.remove(plan))));
    return problems;
  }

  /**
   * The pipeline and one renderer per node (in its namespace). A new lab commits its first
   * tables; re-attaching builds the desired tables without committing, then reads back what
   * each node's kernel holds and plans from that.
   */
  private static assemble(
    state: LabState,
    dir: string,
    options: LabLocation,
    attach: boolean,
    module: FleetBackend,
  ): Lab {
    const loaded = loadFromObjects(state.objects, 'lab');
    const store = new ClusterState();
    const families = state.plan.pods.some((p) => p.ips.some((ip) => familyOf(ip) === 6)) ? [4, 6] : [4];
    const datapath = module.open({
      plan: state.plan,
      store,
      allowNodeLocal: state.allowNodeLocal,
      killDenied: state.killDenied,
      families: families as (4 | 6)[],
    });
    try {
      if (attach) datapath.pause();
      const pipeline = new PolicyPipeline({
        state: store,
        renderers: [datapath.renderer],
        allowNodeLocal: state.allowNodeLocal,
      });
      pipeline.apply({ type: 'resync', cluster: loaded.cluster });
      const clients = podClients(state.plan, dir);
      const lab = new Lab(state, dir, options, loaded.cluster, pipeline, datapath, clients);
      if (attach) lab.drift.push(...datapath.attach());
      return lab;
    } catch (error) {
      datapath.close();
      throw error;
    }
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.datapath.close();
  }

  /**
   * Applies objects like `kubectl apply`: NetworkPolicies and Namespaces are created or
   * replaced, lab Pods take new labels; with `prune`, policies not given are deleted. One
   * incremental transaction per node (two phases across nodes); tracked flows that the new
   * policy denies are cut at their next packet.
   *
   * Under the lab's lock: first catch up with whatever another process did (the state file, and
   * each node's table, checked by its fingerprint and read back when it differs); then record the
   * new policy (if that fails, nothing is touched); then commit. If a node fails, every node is
   * returned to the previous policy and checked, and the previous policy is recorded again.
   */
  apply(objects: readonly object[], prune = false): ApplyReport {
    return locked(
      this.plan.name,
      this.options,
      () => this.applyLocked(objects, prune),
      this.plan.nodes.map((n) => n.netns),
    );
  }

  private applyLocked(objects: readonly object[], prune: boolean): ApplyReport {
    const started = performance.now();
    this.catchUp();
    const { objects: applied, notes } = applyObjects(this.state.objects, objects, prune);
    const previous = { state: this.state, cluster: this.cluster };
    const nextState: LabState = { ...this.state, objects: asRecorded(applied) };
    const next = loadFromObjects(nextState.objects, 'lab').cluster;
    const engines = next.clusterPolicies.find((p) => policyEngine(p.kind) !== 'network-policy-api');
    if (engines && this.datapath.kind === 'ebpf')
      throw new LabError(
        `the eBPF datapath ${CLASSIFIER_ENGINE_REFUSAL} (the input has ${manifestKind(engines.kind)} ${engines.name}); nothing was applied. The nftables datapath handles them`,
      );
    const changes: PipelineChange[] = changesBetween(this.cluster, next);
    try {
      writeState(this.dir, nextState);
    } catch (error) {
      throw new LabError(
        `could not record the lab's new policy, so nothing was applied (no node's table was touched): ${(error as Error).message}`,
      );
    }
    let result;
    try {
      result = this.pipeline.applyBatch(changes);
    } catch (error) {
      if (!(error instanceof DataplaneError)) throw error;
      throw new LabError(`applying failed: ${error.message}\n${this.rollBack(next, previous)}`);
    }
    this.cluster = next;
    this.state = nextState;
    return {
      datapath: this.datapathKind,
      changes: changes.length,
      operations: this.datapath.operations(result.changes.get(this.datapath.renderer.name)),
      millis: performance.now() - started,
      notes,
    };
  }

  /** After a failed apply: every node back to the previous policy, checked; says what was done. */
  private rollBack(failed: Cluster, previous: { state: LabState; cluster: Cluster }): string {
    let outcome: string;
    try {
      this.pipeline.applyBatch(changesBetween(failed, previous.cluster));
      const unchecked = this.datapath.unchecked();
      outcome =
        unchecked.length === 0
          ? 'every node was returned to the previous policy (checked against each kernel table)'
          : `the previous policy was committed, but ${unchecked.join(', ')} then held something else; the next apply starts from what it holds`;
    } catch (error) {
      outcome =
        `returning to the previous policy failed too: ${(error as Error).message}\n` +
        'each node keeps what it holds now; the next apply reads it back and corrects what differs';
    }
    this.cluster = previous.cluster;
    this.state = previous.state;
    try {
      writeState(this.dir, previous.state);
      return `${outcome}; the lab's recorded policy is the previous one`;
    } catch (error) {
      return `${outcome}; recording the previous policy failed as well (${(error as Error).message}), so the state file holds the new policy: the next apply converges the nodes to whatever it is given`;
    }
  }

  /**
   * Catches up with other processes: the state file (another apply), then each node's table
   * (its fingerprint; read back whole when it is not what this process last committed).
   */
  private catchUp(): void {
    const recorded = readState(this.dir, this.plan.name);
    if (!isDeepStrictEqual(recorded.objects, this.state.objects)) {
      const next = loadFromObjects(recorded.objects, 'lab').cluster;
      this.datapath.pause();
      this.pipeline.applyBatch(changesBetween(this.cluster, next));
      this.datapath.attach();
      this.cluster = next;
      this.state = recorded;
      // nftables planned its next commit from what each kernel holds; eBPF resyncs below.
      if (!this.datapath.resyncsAfterAttach) return;
    }
    if (this.datapath.verify()) this.pipeline.apply({ type: 'resync', cluster: this.cluster });
  }

  policyKeys(): string[] {
    return this.cluster.policies.map(policyKey);
  }
}

/** The lab's objects: the namespaces and policies given, and one Pod per lab pod (its address and node). */
export function labObjects(objects: readonly object[], plan: LabPlan): object[] {
  const kept = objects.filter((o) =>
    ['Namespace', 'NetworkPolicy'].includes(String((o as { kind?: unknown }).kind)),
  );
  return [...kept, ...podObjects(plan)];
}

/**
 * Objects as the state file gives them back (JSON drops undefined fields, -0 and the like): held
 * in that form, catchUp's comparison with the file sees only another process's apply — compared
 * with the objects as given, every apply looked like one and paused, re-rendered and resynced.
 */
function asRecorded(objects: readonly object[]): object[] {
  return JSON.parse(JSON.stringify(objects)) as object[];
}

function writeState(dir: string, state: LabState): void {
  writeStateFile(join(dir, 'lab.json'), state);
}

function readState(dir: string, name: string): LabState {
  return readStateFile<LabState>(join(dir, 'lab.json'), `no lab "${name}" is up`);
}
