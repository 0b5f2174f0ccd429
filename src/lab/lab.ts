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
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFromObjects } from '../ingest/index.ts';
import type { Cluster } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { changesBetween, PolicyPipeline, type PipelineChange } from '../pipeline/index.ts';
import { ClusterState } from '../state/index.ts';
import {
  acquireDatapathLock,
  acquireLock,
  DataplaneError,
  ensurePrivateDir,
  isRoot,
  readTrustedFile,
  StateFileError,
  writeFileAtomic,
  type HeldLock,
} from '../dataplane/index.ts';
import { AgentClient } from './agent-client.ts';
import { applyObjects } from './apply-objects.ts';
import { datapathModule, type DatapathKind, type DatapathModule, type LabDatapath } from './datapath.ts';
import { createNetwork, deleteNamespaces, namespacesOf } from './network.ts';
import { familyOf, LAB_NAME, LabError, planLab, podObjects, type LabPlan } from './topology.ts';
import { sourceEntryCommand } from './source-entry.ts';

export const DEFAULT_STATE_ROOT = '/run/palisade/lab';

export interface LabOptions {
  /** Where labs keep their state files, locks and agent sockets. */
  readonly stateRoot?: string;
  /** Nodes to spread pods over when manifests name none. Default 2. */
  readonly nodes?: number;
  /** Node-to-own-pod traffic bypasses policy (the reference's default). Default true. */
  readonly allowNodeLocal?: boolean;
  /** Cut tracked flows that an update denies (at their next packet). Default true. */
  readonly killDenied?: boolean;
  /** How long to wait for another command holding the lab's lock, in ms. Default 30 s. */
  readonly waitMs?: number;
  /** What enforces policy on the nodes: nftables (default) or the eBPF programs. */
  readonly datapath?: DatapathKind;
}

interface LabState {
  readonly version: 1;
  readonly plan: LabPlan;
  /** The lab's cluster: namespaces and policies as given, one Pod per lab pod. */
  readonly objects: readonly object[];
  readonly agents: readonly { readonly pod: string; readonly pid: number; readonly socket: string }[];
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

/** Where a lab's state lives, and its lock (outside the lab's directory, which `down` removes). */
export function labPaths(name: string, stateRoot: string | undefined) {
  const root = stateRoot ?? DEFAULT_STATE_ROOT;
  return { root, dir: join(root, name), lock: join(root, '.locks', `${name}.lock`) };
}

/** The state file of a lab with a control plane (control-plane-lab.ts), where a plain lab keeps lab.json. */
export const CONTROL_PLANE_STATE = 'control-plane.json';

/** Whether the named lab runs with a control plane (its commands go to control-plane-lab.ts). */
export function hasControlPlane(name: string, stateRoot?: string): boolean {
  return existsSync(join(labPaths(name, stateRoot).dir, CONTROL_PLANE_STATE));
}

/**
 * Runs `body` holding the lab's lock and, when given, the datapath locks of its nodes' network
 * namespaces (taken in a fixed order, so two holders never wait for each other).
 */
function locked<T>(
  name: string,
  options: Pick<LabOptions, 'stateRoot' | 'waitMs'>,
  body: () => T,
  netns: readonly string[] = [],
): T {
  const locks = [takeLock(name, options)];
  const release = (): void => {
    for (const lock of locks.reverse()) lock.release();
  };
  try {
    for (const ns of [...netns].sort())
      locks.push(acquireDatapathLock(ns, options.waitMs !== undefined ? { waitMs: options.waitMs } : {}));
    const result = body();
    if (result instanceof Promise) return result.finally(release) as T;
    release();
    return result;
  } catch (error) {
    release();
    throw error;
  }
}

export function takeLock(name: string, options: Pick<LabOptions, 'stateRoot' | 'waitMs'>): HeldLock {
  const { root, lock } = labPaths(name, options.stateRoot);
  try {
    ensurePrivateDir(root);
    return acquireLock(lock, {
      what: `lab "${name}"`,
      ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
    });
  } catch (error) {
    if (error instanceof StateFileError) throw new LabError(error.message);
    throw error;
  }
}

export class Lab {
  /** Nodes whose kernel table differed from the lab's policy when this process attached. */
  readonly drift: { readonly node: string; readonly pending: number | 'replace' }[] = [];

  private constructor(
    private state: LabState,
    private readonly dir: string,
    private readonly options: Pick<LabOptions, 'stateRoot' | 'waitMs'>,
    private cluster: Cluster,
    private readonly pipeline: PolicyPipeline,
    private readonly datapath: LabDatapath,
    private readonly clients: ReadonlyMap<string, AgentClient>,
  ) {}

  get plan(): LabPlan {
    return this.state.plan;
  }

  /** What enforces the lab's policy. */
  get datapathKind(): DatapathKind {
    return this.datapath.kind;
  }

  /** The cluster the lab runs (its pods with their lab addresses and nodes). */
  get current(): Cluster {
    return this.cluster;
  }

  agent(pod: string): AgentClient {
    const client = this.clients.get(pod);
    if (!client) throw new LabError(`no pod ${pod} in lab ${this.plan.name}`);
    return client;
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
      if (existsSync(join(dir, 'lab.json')) || existsSync(join(dir, CONTROL_PLANE_STATE)))
        throw new LabError(`lab "${name}" is already up (palisade lab down first)`);
      const plan = planLab(name, cluster, {
        ...(options.nodes !== undefined ? { nodes: options.nodes } : {}),
      });
      if (plan.pods.length === 0) throw new LabError('the manifests have no pods or workloads to build');
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
        await lab.connectAgents();
        return lab;
      } catch (error) {
        const problems = await Lab.teardown(name, dir, module);
        if (problems.length > 0 && error instanceof Error)
          error.message += `\nwhile removing the half-built lab: ${problems.join('; ')}`;
        throw error;
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
  static async attach(name: string, options: Pick<LabOptions, 'stateRoot' | 'waitMs'> = {}): Promise<Lab> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const module = await datapathModule(readState(dir, name).datapath ?? 'nftables');
    const lab = locked(name, options, () => Lab.assemble(readState(dir, name), dir, options, true, module));
    try {
      await lab.connectAgents();
    } catch (error) {
      lab.close();
      throw error;
    }
    return lab;
  }

  /**
   * Removes everything the lab created: agents, namespaces (and their links), state. What could
   * not be removed is reported (after trying the rest); what was already gone is not a problem.
   */
  static async down(
    name: string,
    options: Pick<LabOptions, 'stateRoot' | 'waitMs'> = {},
  ): Promise<{ namespaces: number }> {
    requireRoot();
    const { dir } = labPaths(name, options.stateRoot);
    const module = await datapathModule(readState(dir, name).datapath ?? 'nftables');
    return locked(name, options, async () => {
      const state = readState(dir, name);
      const problems = await Lab.teardown(name, dir, module, state);
      if (problems.length > 0)
        throw new LabError(`lab "${name}" is not fully down:\n${problems.map((p) => `  ${p}`).join('\n')}`);
      return { namespaces: namespacesOf(state.plan).length };
    });
  }

  /** Stops agents, deletes namespaces, the datapath's pins and the state directory; returns what failed. */
  private static async teardown(
    name: string,
    dir: string,
    module: DatapathModule,
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
    if (state) {
      for (const agent of state.agents) {
        const problem = stopAgent(agent.pid);
        if (problem) problems.push(`agent of ${agent.pod}: ${problem}`);
      }
      try {
        await deleteNamespaces(namespacesOf(state.plan));
      } catch (error) {
        problems.push(String((error as Error).message));
      }
      problems.push(...module.remove(state.plan));
    }
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      problems.push(`cannot remove ${dir}: ${(error as Error).message}`);
    }
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
    options: Pick<LabOptions, 'stateRoot' | 'waitMs'>,
    attach: boolean,
    module: DatapathModule,
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
      const pipeline = new PolicyPipeline({ state: store, renderers: [datapath.renderer] });
      pipeline.apply({ type: 'resync', cluster: loaded.cluster });
      const clients = new Map(state.plan.pods.map((p, i) => [p.id, new AgentClient(socketPath(dir, i))]));
      const lab = new Lab(state, dir, options, loaded.cluster, pipeline, datapath, clients);
      if (attach) lab.drift.push(...datapath.attach());
      return lab;
    } catch (error) {
      datapath.close();
      throw error;
    }
  }

  private async connectAgents(): Promise<void> {
    await connectPodAgents(this.plan, this.clients);
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
      datapath: this.datapath.kind,
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

/** Root, and a name usable in namespace and interface names. */
export function checkLabName(name: string): void {
  requireRoot();
  if (!LAB_NAME.test(name)) throw new LabError(`lab name "${name}": 1-16 lowercase letters, digits or '-'`);
}

/** The lab's objects: the namespaces and policies given, and one Pod per lab pod (its address and node). */
export function labObjects(objects: readonly object[], plan: LabPlan): object[] {
  const kept = objects.filter((o) =>
    ['Namespace', 'NetworkPolicy'].includes(String((o as { kind?: unknown }).kind)),
  );
  return [...kept, ...podObjects(plan)];
}

/** The lab changes network namespaces and nftables: root only, said in one line. */
export function requireRoot(): void {
  if (!isRoot()) throw new LabError('the lab needs root (network namespaces and nftables); run it as root');
}

export const socketPath = (dir: string, index: number): string => join(dir, `pod${index}.sock`);

/** Connects to every pod's agent and has it listen on the pod's TCP and UDP ports. */
export async function connectPodAgents(
  plan: LabPlan,
  clients: ReadonlyMap<string, AgentClient>,
): Promise<void> {
  await Promise.all([...clients.values()].map((c) => c.connect()));
  await Promise.all(
    plan.pods.flatMap((pod) => {
      const client = clients.get(pod.id);
      return client
        ? [
            client.listen(
              pod.ports
                .filter((p) => p.protocol !== 'SCTP')
                .map((p) => ({ port: p.port, protocol: p.protocol as 'TCP' | 'UDP' })),
            ),
          ]
        : [];
    }),
  );
}

export function ensureDir(dir: string): void {
  try {
    ensurePrivateDir(dir);
  } catch (error) {
    throw new LabError((error as Error).message);
  }
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

/** Writes a lab's state file atomically (0600); a failure is a LabError. */
export function writeStateFile(path: string, state: object): void {
  try {
    writeFileAtomic(path, JSON.stringify(state));
  } catch (error) {
    throw new LabError((error as Error).message);
  }
}

function readState(dir: string, name: string): LabState {
  return readStateFile<LabState>(join(dir, 'lab.json'), `no lab "${name}" is up`);
}

/** Reads a lab's state file, trusted only when private; `missing` says what its absence means. */
export function readStateFile<T extends { readonly version: number }>(path: string, missing: string): T {
  if (!existsSync(path)) throw new LabError(`${missing} (no ${path})`);
  let state: T;
  try {
    state = JSON.parse(readTrustedFile(path)) as T;
  } catch (error) {
    if (error instanceof StateFileError) throw new LabError(error.message);
    throw new LabError(`${path}: not a lab state file (${(error as Error).message})`);
  }
  if (state.version !== 1) throw new LabError(`${path}: not a lab state this version reads`);
  return state;
}

/**
 * The agent's entry point and how to start Node on it: compiled (dist/lab/) or bundled
 * (dist/bin/, scripts/bundle-cli.mjs), `pod-agent.js` beside this code; from the sources, see
 * source-entry.ts.
 */
function agentCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts'))
    return sourceEntryCommand('pod-agent.js', here.replace(/lab\.ts$/, 'pod-agent.ts'));
  return [fileURLToPath(new URL('./pod-agent.js', import.meta.url))];
}

export function startAgents(plan: LabPlan, dir: string): { pod: string; pid: number; socket: string }[] {
  const log = openSync(join(dir, 'agents.log'), 'a', 0o600);
  try {
    return plan.pods.map((pod, index) => {
      const socket = socketPath(dir, index);
      const child = spawn('ip', ['netns', 'exec', pod.netns, process.execPath, ...agentCommand(), socket], {
        detached: true,
        stdio: ['ignore', log, log],
      });
      child.unref();
      if (child.pid === undefined) throw new LabError(`could not start the agent of ${pod.id}`);
      return { pod: pod.id, pid: child.pid, socket };
    });
  } finally {
    closeSync(log);
  }
}

/**
 * Stops an agent, after checking the pid is still one of ours (pids are reused). Returns what
 * went wrong, or undefined when it was stopped or was already gone.
 */
export function stopAgent(pid: number): string | undefined {
  let command: string;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH'
      ? undefined
      : `cannot inspect pid ${pid}: ${(error as Error).message}`;
  }
  if (!command.includes('pod-agent')) return undefined; // gone, and the pid reused by another process
  try {
    process.kill(pid, 'SIGKILL');
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ESRCH' ? undefined : `cannot stop pid ${pid}: ${(error as Error).message}`;
  }
}
