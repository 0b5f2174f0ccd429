/**
 * The lab: a mini cluster built from manifests in network namespaces, enforced by the nftables
 * renderer in each node's namespace — the agent's code path — and probed with real packets.
 *
 * `Lab.up` plans, builds the network, starts one agent per pod and applies policy; `Lab.attach`
 * re-opens a running lab from its state file (the cluster it runs, as plain objects) and
 * re-attaches the renderers to the tables already in the kernel, so that `apply` sends only an
 * incremental transaction; `down` removes what `up` created, found through the state file.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync, closeSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFromObjects } from '../ingest/index.ts';
import type { Cluster } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { changesBetween, PolicyPipeline, type PipelineChange } from '../pipeline/index.ts';
import { NftablesRenderer, NodeFleetRenderer } from '../renderers/nftables/index.ts';
import { ClusterState } from '../state/index.ts';
import { isRoot, nftRunner } from '../dataplane/index.ts';
import { AgentClient } from './agent-client.ts';
import { createNetwork, deleteNamespaces, namespacesOf } from './network.ts';
import { LAB_NAME, LabError, planLab, podObjects, type LabPlan } from './topology.ts';

export const DEFAULT_STATE_ROOT = '/run/palisade/lab';

export interface LabOptions {
  /** Where labs keep their state files and agent sockets. */
  readonly stateRoot?: string;
  /** Nodes to spread pods over when manifests name none. Default 2. */
  readonly nodes?: number;
  /** Node-to-own-pod traffic bypasses policy (the reference's default). Default true. */
  readonly allowNodeLocal?: boolean;
  /** Cut tracked flows that an update denies (at their next packet). Default true. */
  readonly killDenied?: boolean;
}

interface LabState {
  readonly version: 1;
  readonly plan: LabPlan;
  /** The lab's cluster: namespaces and policies as given, one Pod per lab pod. */
  readonly objects: readonly object[];
  readonly agents: readonly { readonly pod: string; readonly pid: number; readonly socket: string }[];
  readonly allowNodeLocal: boolean;
  readonly killDenied: boolean;
}

export interface ApplyReport {
  readonly changes: number;
  /** Operations in the transaction, per node. */
  readonly operations: ReadonlyMap<string, number>;
  readonly millis: number;
  readonly notes: readonly string[];
}

/** Policy kinds `lab apply` changes (and `--prune` removes when the files lack them). */
const POLICY_KINDS = new Set([
  'NetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);

const identity = (o: Record<string, unknown>): string => {
  const metadata = (o.metadata ?? {}) as { namespace?: string; name?: string };
  const namespaced = !CLUSTER_SCOPED.has(String(o.kind));
  return `${String(o.kind)}/${namespaced ? (metadata.namespace ?? 'default') : ''}/${metadata.name ?? ''}`;
};

export class Lab {
  private constructor(
    private state: LabState,
    private readonly dir: string,
    private cluster: Cluster,
    private readonly pipeline: PolicyPipeline,
    private readonly clients: ReadonlyMap<string, AgentClient>,
  ) {}

  get plan(): LabPlan {
    return this.state.plan;
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
    requireRoot();
    if (!LAB_NAME.test(name)) throw new LabError(`lab name "${name}": 1-16 lowercase letters, digits or '-'`);
    const dir = join(options.stateRoot ?? DEFAULT_STATE_ROOT, name);
    if (existsSync(join(dir, 'lab.json')))
      throw new LabError(`lab "${name}" is already up (palisade lab down first)`);
    const plan = planLab(name, cluster, { ...(options.nodes !== undefined ? { nodes: options.nodes } : {}) });
    if (plan.pods.length === 0) throw new LabError('the manifests have no pods or workloads to build');
    const kept = objects.filter((o) =>
      ['Namespace', 'NetworkPolicy'].includes(String((o as { kind?: unknown }).kind)),
    );
    const labObjects = [...kept, ...podObjects(plan)];
    mkdirSync(dir, { recursive: true });
    let state: LabState = {
      version: 1,
      plan,
      objects: labObjects,
      agents: [],
      allowNodeLocal: options.allowNodeLocal ?? true,
      killDenied: options.killDenied ?? true,
    };
    // Written first, so that `down` can clean up after a failed `up`.
    writeState(dir, state);
    try {
      await createNetwork(plan);
      const lab = Lab.assemble(state, dir, false);
      state = { ...state, agents: startAgents(plan, dir) };
      writeState(dir, state);
      lab.state = state;
      await lab.connectAgents();
      return lab;
    } catch (error) {
      await Lab.down(name, options).catch(() => undefined);
      throw error;
    }
  }

  /** Re-opens a running lab. */
  static async attach(name: string, options: Pick<LabOptions, 'stateRoot'> = {}): Promise<Lab> {
    requireRoot();
    const dir = join(options.stateRoot ?? DEFAULT_STATE_ROOT, name);
    const state = readState(dir, name);
    const lab = Lab.assemble(state, dir, true);
    await lab.connectAgents();
    return lab;
  }

  /** Removes everything the lab created: agents, namespaces (and their links), state. */
  static async down(
    name: string,
    options: Pick<LabOptions, 'stateRoot'> = {},
  ): Promise<{ namespaces: number }> {
    requireRoot();
    const dir = join(options.stateRoot ?? DEFAULT_STATE_ROOT, name);
    const state = readState(dir, name);
    for (const agent of state.agents) stopAgent(agent.pid);
    const namespaces = namespacesOf(state.plan);
    await deleteNamespaces(namespaces);
    rmSync(dir, { recursive: true, force: true });
    return { namespaces: namespaces.length };
  }

  /** The pipeline, one renderer per node (in its namespace), and the first (or adopted) commit. */
  private static assemble(state: LabState, dir: string, adopt: boolean): Lab {
    const loaded = loadFromObjects(state.objects, 'lab');
    const store = new ClusterState();
    // Re-attaching: the first (whole-table) commit describes what the kernel already holds, so
    // it is taken as applied without sending it; later commits are incremental.
    let attaching = adopt;
    const renderers = new Map<string, NftablesRenderer>();
    for (const node of state.plan.nodes) {
      const real = nftRunner({ netns: node.netns });
      renderers.set(
        node.name,
        new NftablesRenderer({
          state: store,
          runner: { apply: (script) => (attaching ? undefined : real.apply(script)) },
          allowNodeLocal: state.allowNodeLocal,
          recheckFlows: state.killDenied,
        }),
      );
    }
    const pipeline = new PolicyPipeline({ state: store, renderers: [new NodeFleetRenderer(renderers)] });
    pipeline.apply({ type: 'resync', cluster: loaded.cluster });
    attaching = false;
    const clients = new Map(state.plan.pods.map((p, i) => [p.id, new AgentClient(socketPath(dir, i))]));
    return new Lab(state, dir, loaded.cluster, pipeline, clients);
  }

  private async connectAgents(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.connect()));
    await Promise.all(
      this.plan.pods.map((pod) =>
        this.agent(pod.id).listen(
          pod.ports
            .filter((p) => p.protocol !== 'SCTP')
            .map((p) => ({ port: p.port, protocol: p.protocol as 'TCP' | 'UDP' })),
        ),
      ),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
  }

  /**
   * Applies objects like `kubectl apply`: NetworkPolicies and Namespaces are created or
   * replaced, lab Pods take new labels; with `prune`, policies not given are deleted. One
   * incremental transaction per node (two phases across nodes); tracked flows that the new
   * policy denies are cut at their next packet.
   */
  apply(objects: readonly object[], prune = false): ApplyReport {
    const started = performance.now();
    const notes: string[] = [];
    const byIdentity = new Map(
      this.state.objects.map((o) => [identity(o as Record<string, unknown>), o] as const),
    );
    const given = new Set<string>();
    for (const object of objects) {
      const o = object as Record<string, unknown>;
      const key = identity(o);
      given.add(key);
      if (o.kind === 'Pod') {
        const existing = byIdentity.get(key) as { metadata: Record<string, unknown> } | undefined;
        if (!existing) {
          notes.push(`${key.slice(4)}: not a pod of this lab (pods are created by 'lab up'); ignored`);
          continue;
        }
        const labels = ((o.metadata ?? {}) as { labels?: unknown }).labels ?? {};
        byIdentity.set(key, { ...existing, metadata: { ...existing.metadata, labels } });
      } else if (POLICY_KINDS.has(String(o.kind)) || o.kind === 'Namespace') {
        byIdentity.set(key, object);
      } else {
        notes.push(`${String(o.kind)}: not applied in the lab; ignored`);
      }
    }
    if (prune)
      for (const key of [...byIdentity.keys()])
        if (POLICY_KINDS.has(key.slice(0, key.indexOf('/'))) && !given.has(key)) byIdentity.delete(key);
    const nextObjects = [...byIdentity.values()];
    const next = loadFromObjects(nextObjects, 'lab').cluster;
    const changes: PipelineChange[] = changesBetween(this.cluster, next);
    const result = this.pipeline.applyBatch(changes);
    this.cluster = next;
    this.state = { ...this.state, objects: nextObjects };
    writeState(this.dir, this.state);
    const fleet = result.changes.get('nftables') as Map<string, { operations: number }> | undefined;
    return {
      changes: changes.length,
      operations: new Map(
        [...(fleet ?? new Map<string, { operations: number }>())].map(([n, c]) => [n, c.operations]),
      ),
      millis: performance.now() - started,
      notes,
    };
  }

  policyKeys(): string[] {
    return this.cluster.policies.map(policyKey);
  }
}

/** The lab changes network namespaces and nftables: root only, said in one line. */
export function requireRoot(): void {
  if (!isRoot()) throw new LabError('the lab needs root (network namespaces and nftables); run it as root');
}

const socketPath = (dir: string, index: number): string => join(dir, `pod${index}.sock`);

function writeState(dir: string, state: LabState): void {
  writeFileSync(join(dir, 'lab.json.tmp'), JSON.stringify(state));
  rmSync(join(dir, 'lab.json'), { force: true });
  writeFileSync(join(dir, 'lab.json'), readFileSync(join(dir, 'lab.json.tmp')));
  rmSync(join(dir, 'lab.json.tmp'), { force: true });
}

function readState(dir: string, name: string): LabState {
  let text: string;
  try {
    text = readFileSync(join(dir, 'lab.json'), 'utf8');
  } catch {
    throw new LabError(`no lab "${name}" is up (no ${join(dir, 'lab.json')})`);
  }
  const state = JSON.parse(text) as LabState;
  if (state.version !== 1) throw new LabError(`${join(dir, 'lab.json')}: not a lab state this version reads`);
  return state;
}

/** The agent's entry point and how to start Node on it (through tsx when running from source). */
function agentCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts'))
    return ['--import', import.meta.resolve('tsx'), here.replace(/lab\.ts$/, 'pod-agent.ts')];
  return [here.replace(/lab\.js$/, 'pod-agent.js')];
}

function startAgents(plan: LabPlan, dir: string): { pod: string; pid: number; socket: string }[] {
  const log = openSync(join(dir, 'agents.log'), 'a');
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

/** Stops an agent, after checking the pid is still one of ours (pids are reused). */
function stopAgent(pid: number): void {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (command.includes('pod-agent')) process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
