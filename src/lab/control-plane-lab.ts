/**
 * The lab with a control plane (`lab up --control-plane`): the same network, pods and listeners
 * as the lab, but nothing in the lab's own process renders policy. The lab's objects go into a
 * real etcd through the reflector (control-plane.ts), one `palisade agent` per node enforces what
 * etcd holds in its node's namespace, and every later change (`lab apply`) reaches the kernel only
 * through etcd: reflector → etcd → agent → nft. etcd is authenticated (control-plane-etcd.ts):
 * the lab writes as the reflector and reads as a read-only identity. `lab apply` writes etcd
 * first and records the change only once etcd took it; every wait on etcd has a deadline.
 * `lab probe` first waits until every agent has realized the store's revision, then probes like
 * the plain lab; `lab status` reads the agents' status keys; `lab down` stops every process it
 * started by pid and removes the directory (etcd's data and the certificates with it).
 *
 * The state file (`control-plane.json`, beside where a plain lab keeps `lab.json`) records the plan,
 * the lab's objects and every pid, written before each process starts so a failed `up` is undone.
 */
import { join } from 'node:path';
import { loadFromObjects } from '../ingest/index.ts';
import type { Cluster } from '../model/types.ts';
import { etcdAccessError, isEtcdClientError } from '../etcd/index.ts';
import type { EtcdStore } from '../etcd/types.ts';
import { DEFAULT_ROOT } from '../reflected/index.ts';
import type { AgentClient } from './agent-client.ts';
import { applyObjects } from './apply-objects.ts';
import {
  realization,
  startNodeAgents,
  stopControlPlane,
  waitRealized,
  type Realization,
} from './control-plane.ts';
import { connectLabEtcd, reflectObjects, restartLabEtcd, startLabEtcd } from './control-plane-etcd.ts';
import type { ControlPlaneRecord } from './control-plane-record.ts';
import {
  CONTROL_PLANE_STATE,
  checkLabName,
  planNewLab,
  ensureDir,
  labPaths,
  readStateFile,
  requireRoot,
  takeLock,
  writeStateFile,
  type LabLocation,
} from './lab-files.ts';
import { labObjects, type LabOptions } from './lab.ts';
import {
  connectOrClose,
  removeLabParts,
  throwIfNotFullyDown,
  withTeardownProblems,
  type PodAgentRecord,
} from './lab-lifecycle.ts';
import { connectPodAgents, podClient, podClients, startAgents } from './pod-agents.ts';
import { createNetwork, namespacesOf } from './network.ts';
import { LabError, type LabPlan } from './topology.ts';
import { datapathModule, type DatapathKind } from './datapath.ts';

interface ControlPlaneState {
  readonly version: 1;
  readonly plan: LabPlan;
  /** The lab's cluster as given to the reflector: namespaces and policies, one Pod per lab pod. */
  readonly objects: readonly object[];
  readonly podAgents: readonly PodAgentRecord[];
  readonly allowNodeLocal: boolean;
  /** What the agents enforce with; absent in labs made before the choice existed: nftables. */
  readonly datapath?: DatapathKind;
  /** Absent until etcd runs. */
  readonly controlPlane?: ControlPlaneRecord;
}

/** How long a write to the lab's etcd may wait (a leader to step down, etcd to answer) by default. */
const DEFAULT_ETCD_TIMEOUT_MS = 30_000;

/** What `lab apply` did through etcd. */
interface ControlPlaneApplyReport {
  readonly keysWritten: number;
  /** The store's policy revision after the write. */
  readonly revision: number;
  readonly notes: readonly string[];
}

export class ControlPlaneLab {
  private constructor(
    private state: ControlPlaneState,
    private readonly dir: string,
    private readonly options: LabLocation,
    private cluster: Cluster,
    private readonly store: EtcdStore,
    private readonly clients: ReadonlyMap<string, AgentClient>,
  ) {}

  get plan(): LabPlan {
    return this.state.plan;
  }

  /** The cluster the lab's objects describe (what the reference evaluator judges). */
  get current(): Cluster {
    return this.cluster;
  }

  /** The lab's objects as the reflector last wrote them. */
  get objects(): readonly object[] {
    return this.state.objects;
  }

  get record(): ControlPlaneRecord {
    return this.state.controlPlane!;
  }

  agent(pod: string): AgentClient {
    return podClient(this.clients, pod, this.plan.name);
  }

  /**
   * Builds the network and pods, starts etcd, reflects the objects, starts the node agents and
   * waits (at most `realizeTimeoutMs`) until each has realized what etcd holds.
   */
  static async up(
    name: string,
    objects: readonly object[],
    cluster: Cluster,
    options: LabOptions & { readonly realizeTimeoutMs?: number; readonly flowLog?: boolean } = {},
  ): Promise<ControlPlaneLab> {
    checkLabName(name);
    const { dir } = labPaths(name, options.stateRoot);
    const lock = takeLock(name, options);
    try {
      const plan = planNewLab(name, dir, cluster, options.nodes);
      let state: ControlPlaneState = {
        version: 1,
        plan,
        objects: labObjects(objects, plan),
        podAgents: [],
        allowNodeLocal: options.allowNodeLocal ?? true,
        ...(options.datapath && options.datapath !== 'nftables' ? { datapath: options.datapath } : {}),
      };
      ensureDir(dir);
      writeState(dir, state); // first, so that a failed `up` can be undone
      let store: EtcdStore | undefined;
      try {
        await createNetwork(plan);
        state = { ...state, podAgents: startAgents(plan, dir) };
        writeState(dir, state);
        const nodes = plan.nodes.map((n) => n.name);
        const etcd = await startLabEtcd(dir, name, nodes, DEFAULT_ROOT);
        state = { ...state, controlPlane: { etcd, agents: [], prefix: DEFAULT_ROOT } };
        writeState(dir, state);
        store = await connectLabEtcd(state.controlPlane!);
        await reflectObjects(state.controlPlane!, dir, state.objects, DEFAULT_ETCD_TIMEOUT_MS);
        const agents = startNodeAgents(plan, dir, etcd, {
          allowNodeLocal: state.allowNodeLocal,
          datapath: state.datapath ?? 'nftables',
          ...(options.flowLog ? { flowLog: true } : {}),
        });
        state = { ...state, controlPlane: { ...state.controlPlane!, agents } };
        writeState(dir, state);
        const lab = ControlPlaneLab.open(state, dir, options, store);
        await connectPodAgents(plan, lab.clients);
        const reading = await waitRealized(store, plan, options.realizeTimeoutMs ?? 60_000);
        if (reading.lagging.length > 0) {
          lab.close();
          throw new LabError(`the agents did not realize the lab's policy in time:\n${lagLines(reading)}`);
        }
        return lab;
      } catch (error) {
        store?.close();
        throw withTeardownProblems(error, await teardown(dir, state));
      }
    } finally {
      lock.release();
    }
  }

  /** Re-opens a running lab with a control plane (its pods' agents and etcd). */
  static async attach(name: string, options: LabLocation = {}): Promise<ControlPlaneLab> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const state = readState(dir, name);
    if (!state.controlPlane)
      throw new LabError(`lab "${name}" has no running control plane (palisade lab down)`);
    const store = await connectLabEtcd(state.controlPlane);
    const lab = ControlPlaneLab.open(state, dir, options, store);
    return connectOrClose(lab, state.plan, lab.clients);
  }

  private static open(
    state: ControlPlaneState,
    dir: string,
    options: LabLocation,
    store: EtcdStore,
  ): ControlPlaneLab {
    const cluster = loadFromObjects(state.objects, 'lab').cluster;
    const clients = podClients(state.plan, dir);
    return new ControlPlaneLab(state, dir, options, cluster, store, clients);
  }

  /** Removes everything the lab started and created; what could not be removed is an error. */
  static async down(
    name: string,
    options: LabLocation = {},
  ): Promise<{ namespaces: number; processes: number }> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const lock = takeLock(name, options);
    try {
      const state = readState(dir, name);
      throwIfNotFullyDown(name, await teardown(dir, state));
      const processes =
        state.podAgents.length + (state.controlPlane ? state.controlPlane.agents.length + 1 : 0);
      return { namespaces: namespacesOf(state.plan).length, processes };
    } finally {
      lock.release();
    }
  }

  /**
   * Changes the cluster like `kubectl apply`, only through etcd: the lab's objects are reflected
   * into etcd, then recorded (what the reference evaluator judges is what etcd took); the agents
   * take it from there. Waiting on etcd longer than `etcdTimeoutMs` (a reflector that holds
   * leadership, an etcd that does not answer) fails with one line and records nothing. Returns
   * the store's policy revision after the write, which `waitRealized` waits for.
   */
  async apply(
    objects: readonly object[],
    prune = false,
    options: { readonly etcdTimeoutMs?: number } = {},
  ): Promise<ControlPlaneApplyReport> {
    const lock = takeLock(this.plan.name, this.options);
    try {
      const recorded = readState(this.dir, this.plan.name);
      const { objects: next, notes } = applyObjects(recorded.objects, objects, prune);
      const timeout = options.etcdTimeoutMs ?? DEFAULT_ETCD_TIMEOUT_MS;
      const { written } = await reflectObjects(this.record, this.dir, next, timeout);
      const nextState: ControlPlaneState = { ...recorded, objects: next };
      writeState(this.dir, nextState);
      this.state = nextState;
      this.cluster = loadFromObjects(next, 'lab').cluster;
      const { status } = await this.status();
      return { keysWritten: written, revision: status.policyRevision, notes };
    } finally {
      lock.release();
    }
  }

  /**
   * Starts a lab's etcd again on its data after it died (killed, crashed): the same port, unix
   * socket (the one SIGKILL left is removed) and certificates, so the agents' watches resume by
   * themselves; records its new pid. Refuses while it still serves the socket.
   */
  static async restartEtcd(name: string, options: LabLocation = {}): Promise<ControlPlaneRecord['etcd']> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const lock = takeLock(name, options);
    try {
      const recorded = readState(dir, name);
      if (!recorded.controlPlane) throw new LabError(`lab "${name}" has no control plane`);
      const etcd = await restartLabEtcd(dir, name, recorded.controlPlane.etcd);
      writeState(dir, { ...recorded, controlPlane: { ...recorded.controlPlane, etcd } });
      return etcd;
    } catch (error) {
      if (error instanceof LabError) throw error;
      throw new LabError(`could not restart the lab's etcd: ${(error as Error).message.split('\n')[0]}`);
    } finally {
      lock.release();
    }
  }

  /** The agents' status against the store's policy revision, now. */
  async status(): Promise<Realization> {
    try {
      return await realization(this.store, this.plan, this.record.prefix);
    } catch (error) {
      throw labEtcdError(error, this.record, "reading the agents' status");
    }
  }

  /** Waits until every agent has realized the store's policy revision (at most `timeoutMs`). */
  async waitRealized(timeoutMs: number): Promise<Realization> {
    try {
      return await waitRealized(this.store, this.plan, timeoutMs, this.record.prefix);
    } catch (error) {
      throw labEtcdError(error, this.record, 'waiting for the agents');
    }
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.store.close();
  }
}

/** An etcd client error while the lab reads etcd, as one line (others unchanged). */
function labEtcdError(error: unknown, record: ControlPlaneRecord, doing: string): Error {
  if (!isEtcdClientError(error)) return error instanceof Error ? error : new Error(String(error));
  return new LabError(
    `the lab's etcd, ${doing}: ${etcdAccessError(error, [record.etcd.endpoint], doing).message}`,
  );
}

/** One line per lagging node. */
export function lagLines(reading: Realization): string {
  return reading.lagging.map((l) => `  ${l.node}: ${l.why}`).join('\n');
}

/** Stops the control plane and pod agents, deletes the namespaces and the directory; returns what failed. */
async function teardown(dir: string, state: ControlPlaneState): Promise<string[]> {
  const problems = state.controlPlane ? await stopControlPlane(state.controlPlane) : [];
  // The agents leave their datapath enforcing when they stop: eBPF's pins outlive the namespaces.
  const removeDatapath = async (plan: LabPlan): Promise<readonly string[]> =>
    state.datapath === 'ebpf' ? (await datapathModule('ebpf')).remove(plan) : [];
  problems.push(...(await removeLabParts(dir, state, removeDatapath)));
  return problems;
}

function writeState(dir: string, state: ControlPlaneState): void {
  writeStateFile(join(dir, CONTROL_PLANE_STATE), state);
}

function readState(dir: string, name: string): ControlPlaneState {
  return readStateFile<ControlPlaneState>(
    join(dir, CONTROL_PLANE_STATE),
    `no lab "${name}" with a control plane is up`,
  );
}
