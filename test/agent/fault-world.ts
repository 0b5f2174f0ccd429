/**
 * The world a fault test runs in (root, real etcd): a lab network (a namespace per node and per
 * pod, echo agents in the pods), a restartable etcd of its own, and one `palisade agent` process
 * per node enforcing in that node's namespace — the agents, not the lab, own the tables. Checks:
 * each node's table ≡ a fresh render of what etcd holds (read back, as an agent attaches), real
 * connections between pods ≡ the reference evaluator, and a concurrent prober that records any
 * connection which no state of the test's history allows. `close()` removes every process,
 * namespace, data dir and temp dir, whatever failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectEtcd, freePort, startEtcd, type EtcdServer, type EtcdStore } from '../../src/etcd/index.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { DATAPATH_LOCK_ROOT, run } from '../../src/dataplane/index.ts';
import { attachmentProblems, routedDevices } from '../../src/datapaths/ebpf/kernel/attachments.ts';
import type { Lab } from '../../src/lab/index.ts';
import { referenceVerdict } from '../../src/lab/probe.ts';
import { podObjects } from '../../src/lab/topology.ts';
import { parseCidr, type Cidr } from '../../src/net/ip.ts';
import { encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { indexCluster } from '../../src/semantics/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import { startLab } from '../helpers/kernel.ts';
import type { Raw } from '../helpers/builders.ts';
import { distanceFromFresh, ebpfDistanceFromFresh, writeObjects } from './helpers.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { CuttableRelay } from './side-processes.ts';

const PORTS = [
  { port: 80, protocol: 'TCP' as const },
  { port: 5432, protocol: 'TCP' as const },
];

/** Polls `check` until it is true; throws naming `what` (and the last detail) at the deadline. */
export async function until(
  what: string,
  check: () => Promise<boolean | string> | boolean | string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: boolean | string = false;
  while (Date.now() < deadline) {
    last = await check();
    if (last === true) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${typeof last === 'string' ? ` (${last})` : ''}`);
}

/**
 * How long an agent's /readyz or /metrics answer is waited for. An agent realizing a change on a
 * loaded two-core machine holds its event loop for a second or more: with 1 s, a rehearsal under
 * load found no answer from /metrics where one read was all a trial made. Callers poll until
 * their own deadline.
 */
const ANSWER_MS = 5000;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** An etcd that can be stopped and started again on the same port and data. */
export class RestartableEtcd {
  private server: EtcdServer | undefined;
  private constructor(
    readonly dataDir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<RestartableEtcd> {
    const etcd = new RestartableEtcd(
      mkdtempSync(join(tmpdir(), `palisade-fault-etcd-${process.pid}-`)),
      await freePort(),
    );
    await etcd.up();
    return etcd;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    // Large transactions (the SIGKILL fault writes thousands of pods at once).
    this.server = await startEtcd({
      dataDir: this.dataDir,
      port: this.port,
      name: `fault-${this.port}`,
      maxTxnOps: 10_000,
    });
  }

  /** Stops etcd (SIGTERM, then SIGKILL); the data stays for `up`. */
  async down(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  /** Kills etcd with SIGKILL (no shutdown of its own); the data stays for `up`. */
  async crash(): Promise<void> {
    const server = this.server;
    if (!server) return;
    process.kill(server.pid, 'SIGKILL');
    await server.stop(); // reaps it and waits for the exit
    this.server = undefined;
  }

  async remove(): Promise<void> {
    await this.down();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** One `palisade agent` process for a node. */
export class AgentProcess {
  child: ChildProcess | undefined;
  log = '';
  constructor(
    private readonly args: readonly string[],
    private readonly env: NodeJS.ProcessEnv,
    readonly listenPort: number,
  ) {}

  start(): void {
    const child = spawn(process.execPath, [...palisadeArgv(), 'agent', ...this.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: this.env,
    });
    const keep = (d: Buffer): void => {
      this.log = (this.log + d.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    this.child = child;
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('agent not started');
    return pid;
  }

  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** SIGKILL (resumed first if stopped) and wait for the exit, bounded. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await Promise.race([exited, sleep(5000)]);
  }

  /**
   * `/readyz`: status code and body, or undefined when the agent does not answer within
   * `ANSWER_MS`.
   */
  async readyz(): Promise<{ status: number; body: string } | undefined> {
    try {
      const response = await fetch(`http://127.0.0.1:${this.listenPort}/readyz`, {
        signal: AbortSignal.timeout(ANSWER_MS),
      });
      return { status: response.status, body: await response.text() };
    } catch {
      return undefined;
    }
  }

  /**
   * A counter or gauge from the agent's `/metrics` (summed over its label sets), or undefined
   * when the agent does not answer or does not have it: an HTTP read, cheap beside reading a
   * datapath.
   */
  async metric(name: string): Promise<number | undefined> {
    try {
      const response = await fetch(`http://127.0.0.1:${this.listenPort}/metrics`, {
        signal: AbortSignal.timeout(ANSWER_MS),
      });
      if (!response.ok) return undefined;
      let sum: number | undefined;
      for (const line of (await response.text()).split('\n')) {
        const sample = /^(\w+)(?:\{[^}]*\})? (\S+)$/.exec(line);
        if (sample?.[1] === name) sum = (sum ?? 0) + Number(sample[2]);
      }
      return sum;
    } catch {
      return undefined;
    }
  }

  /** The nft processes this agent runs now (exec runner: `ip netns exec … nft -f -`). */
  nftChildren(): number[] {
    const pids: number[] = [];
    try {
      for (const task of readdirSync(`/proc/${this.pid}/task`)) {
        const children = readFileSync(`/proc/${this.pid}/task/${task}/children`, 'utf8').trim();
        for (const child of children.split(' ').filter(Boolean)) {
          const command = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
          if (command.some((c) => c.endsWith('nft')) && command.includes('-f')) pids.push(Number(child));
        }
      }
    } catch {
      // the process or a child just went away
    }
    return pids;
  }
}

export interface WorldOptions {
  /** What the agents enforce with (default nftables). */
  readonly datapath?: 'nftables' | 'ebpf';
  /** Agents reach etcd through a cuttable relay. */
  readonly relay?: boolean;
  /** Environment of the agent processes (PATH, PALISADE_NFT). */
  readonly env?: NodeJS.ProcessEnv;
}

/** The fault tests' cluster: web and db pods on two nodes; db admits web on 5432, web admits db on 80. */
export function baseObjects(): Raw[] {
  const pod = (name: string, node: string, app: string, port: number): Raw => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'shop', labels: { app } },
    spec: { nodeName: node, containers: [{ name: 'c', ports: [{ containerPort: port }] }] },
  });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } },
    pod('web-1', 'node-1', 'web', 80),
    pod('db-1', 'node-1', 'db', 5432),
    pod('web-2', 'node-2', 'web', 80),
    pod('db-2', 'node-2', 'db', 5432),
    ingress('db-from-web', { app: 'db' }, { app: 'web' }, 5432),
    ingress('web-from-db', { app: 'web' }, { app: 'db' }, 80),
  ];
}

export function ingress(
  name: string,
  selected: Record<string, string>,
  from: Record<string, string>,
  port: number,
): Raw {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'shop' },
    spec: {
      podSelector: { matchLabels: selected },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: from } }], ports: [{ port }] }],
    },
  };
}

/** A pod of the cluster in etcd only (no lab namespace): it widens the nodes' address sets. */
export function extraPod(i: number, labels: Record<string, string>): Raw {
  const ip = `10.250.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `extra-${i}`, namespace: 'shop', labels },
    spec: { nodeName: 'node-9', containers: [{ name: 'c' }] },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], hostIP: '192.168.250.99' },
  };
}

const identity = (o: Raw): string => {
  const m = o.metadata as { namespace?: string; name?: string };
  return `${String(o.kind)}/${m.namespace ?? ''}/${m.name ?? ''}`;
};

export class FaultWorld {
  /** What etcd holds now (objects by identity), and every cluster state the test has written. */
  objects = new Map<string, Raw>();
  readonly history: Cluster[] = [];
  readonly agents = new Map<string, AgentProcess>();
  private readonly cleanups: (() => Promise<void> | void)[] = [];
  etcd!: RestartableEtcd;
  store!: EtcdStore;
  relay: CuttableRelay | undefined;
  lab!: Lab;
  readonly layout: KeyLayout;
  readonly root: string;
  datapath: 'nftables' | 'ebpf' = 'nftables';

  private constructor(readonly name: string) {
    this.root = `/fault-${name}-${process.pid}`;
    this.layout = new KeyLayout(this.root);
  }

  /** Builds the lab, starts etcd, writes the cluster and starts an agent per node (not waited for). */
  static async create(name: string, options: WorldOptions = {}): Promise<FaultWorld> {
    const world = new FaultWorld(name);
    try {
      await world.build(options);
    } catch (error) {
      await world.close();
      throw error;
    }
    return world;
  }

  private async build(options: WorldOptions): Promise<void> {
    const base = baseObjects();
    const loaded = loadFromObjects(base);
    this.datapath = options.datapath ?? 'nftables';
    const started = await startLab(`f${this.name}`, base, loaded.cluster, { datapath: this.datapath });
    this.lab = started.lab;
    this.cleanups.push(() => started.down());
    this.etcd = await RestartableEtcd.start();
    this.cleanups.push(() => this.etcd.remove());
    this.store = await connectEtcd({ endpoints: [this.etcd.endpoint] });
    this.cleanups.push(() => this.store.close());
    if (options.relay) {
      this.relay = await CuttableRelay.start(this.etcd.port);
      const relay = this.relay;
      this.cleanups.push(() => relay.close());
    }
    // The cluster in etcd: the namespace and policies as given, the pods as the lab runs them.
    const objects = [...base.filter((o) => o.kind !== 'Pod'), ...(podObjects(this.lab.plan) as Raw[])];
    await this.write(objects);
    await Promise.all(this.lab.plan.pods.map((pod) => this.lab.agent(pod.id).listen(PORTS)));
    for (const node of this.lab.plan.nodes) {
      const listen = await freePort();
      const agent = new AgentProcess(
        [
          '--node',
          node.name,
          '--etcd',
          this.relay?.endpoint ?? this.etcd.endpoint,
          '--datapath',
          this.datapath,
          '--netns',
          node.netns,
          '--pod-cidr',
          `10.244.${node.index + 1}.0/24`,
          '--prefix',
          this.root,
          '--listen',
          `127.0.0.1:${listen}`,
          '--lease-ttl',
          '2',
          // Verified every second: the eBPF datapath has no notification for a removed link or a
          // map entry written by another process.
          '--verify-interval',
          '1000',
          '--status-interval',
          '100',
          '--log-level',
          process.env.FAULT_LOG_LEVEL ?? 'info',
        ],
        { ...process.env, ...options.env },
        listen,
      );
      this.agents.set(node.name, agent);
      // A killed agent cannot release its datapath lock, so its file stays (by design: a lock
      // file proves nothing); the test removes what its own agents leave.
      const lockFile = join(DATAPATH_LOCK_ROOT, `${node.netns}.lock`);
      this.cleanups.push(async () => {
        await agent.kill();
        rmSync(lockFile, { force: true });
      });
      agent.start();
    }
  }

  podCidrs(node: string): Cidr[] {
    const index = this.lab.plan.nodes.find((n) => n.name === node)?.index ?? 0;
    const parsed = parseCidr(`10.244.${index + 1}.0/24`);
    if (!parsed.ok) throw new Error('pod cidr');
    return [parsed.value];
  }

  /** Puts objects (or deletes `{ delete }`) in one transaction; records the new state. */
  async write(objects: readonly (Raw | { readonly delete: Raw })[]): Promise<number> {
    const next = new Map(this.objects);
    for (const o of objects)
      if ('delete' in o) next.delete(identity((o as { delete: Raw }).delete));
      else next.set(identity(o), o);
    // Recorded before the write: the agents may enforce it before the write's answer comes back.
    this.history.push(this.cluster([...next.values()]));
    const revision = await writeObjects(this.store, this.layout, objects);
    this.objects = next;
    return revision;
  }

  /**
   * Puts raw values (hostile ones: what no reflector writes) in one transaction with `objects`;
   * records the state of `objects` only (a value that cannot be read changes nothing).
   */
  async writeRaw(
    values: readonly { key: string; value: string }[],
    objects: readonly Raw[] = [],
  ): Promise<number> {
    const next = new Map(this.objects);
    for (const o of objects) next.set(identity(o), o);
    this.history.push(this.cluster([...next.values()]));
    const ops = [
      ...objects.map((o) => {
        const encoded = encodeObject(this.layout, o, 'test');
        return { type: 'put' as const, key: encoded.key, value: encoded.value! };
      }),
      ...values.map((v) => ({ type: 'put' as const, key: v.key, value: v.value })),
      { type: 'put' as const, key: `${this.layout.resourceVersions}pod`, value: String(Date.now()) },
    ];
    const revision = (await this.store.txn([], ops)).revision;
    this.objects = next;
    return revision;
  }

  /** The etcd key of an object. */
  key(object: Raw): string {
    const m = object.metadata as { namespace?: string; name: string };
    return this.layout.key(String(object.kind), m.namespace ?? 'default', m.name);
  }

  /** Runs nft in a node's namespace, as another writer would. */
  async nft(node: string, args: readonly string[], input?: string): Promise<void> {
    const netns = this.lab.plan.nodes.find((n) => n.name === node)!.netns;
    const result = await run(
      'ip',
      ['netns', 'exec', netns, 'nft', ...args],
      input !== undefined ? { input } : {},
    );
    if (result.code !== 0) throw new Error(`nft ${args.join(' ')} in ${netns}: ${result.stderr}`);
  }

  /** Records that etcd now holds `objects` (written by someone else: a reflector). */
  holds(objects: readonly Raw[]): void {
    this.objects = new Map(objects.map((o) => [identity(o), o]));
    this.history.push(this.cluster());
  }

  /** Changes a lab pod's labels (a pod label change, as the reflector writes it). */
  relabel(name: string, labels: Record<string, string>): Raw {
    const current = this.objects.get(`Pod/shop/${name}`);
    if (!current) throw new Error(`no pod ${name}`);
    return { ...current, metadata: { ...(current.metadata as object), labels } };
  }

  cluster(objects: readonly Raw[] = [...this.objects.values()]): Cluster {
    return loadFromObjects(objects).cluster;
  }

  /**
   * Waits until every node's table equals a fresh render of `objects`; on a timeout the error says
   * what etcd holds against them, then `context()` (logs of the processes feeding etcd).
   */
  async tablesReach(
    what: string,
    objects: readonly Raw[],
    timeoutMs: number,
    context: () => string,
  ): Promise<void> {
    await until(
      what,
      () => {
        const difference = this.tablesDiffer(objects);
        return difference === '' || difference;
      },
      timeoutMs,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await this.etcdDiffers(objects)}\n${context()}`);
    });
  }

  /** What etcd holds against `objects`, by key ('' when they agree): for a failing test's message. */
  async etcdDiffers(objects: readonly Raw[] = [...this.objects.values()]): Promise<string> {
    const inEtcd = new Set(
      (await this.store.range(this.layout.objects)).kvs.map((kv) => {
        const key = this.layout.parse(kv.key);
        return key ? `${key.kind} ${key.namespace ?? ''}/${key.name}` : kv.key;
      }),
    );
    const wanted = new Set(
      objects.map((o) => {
        const m = o.metadata as { name: string; namespace?: string };
        return `${String(o.kind)} ${m.namespace ?? ''}/${m.name}`;
      }),
    );
    const missing = [...wanted].filter((k) => !inEtcd.has(k));
    const extra = [...inEtcd].filter((k) => !wanted.has(k));
    if (missing.length === 0 && extra.length === 0) return '';
    return `etcd misses: ${missing.join(', ') || 'nothing'}; etcd has besides: ${extra.join(', ') || 'nothing'}`;
  }

  /** Operations between a node's datapath and a fresh render of `objects` (0: equal). */
  distance(node: string, objects: readonly Raw[] = [...this.objects.values()]): number | 'replace' {
    const netns = this.lab.plan.nodes.find((n) => n.name === node)!.netns;
    return this.datapath === 'ebpf'
      ? ebpfDistanceFromFresh(netns, objects, node)
      : distanceFromFresh(netns, objects, node, this.podCidrs(node));
  }

  /**
   * Every node's datapath ≡ a fresh render of `objects` — and, for eBPF, its programs on every
   * interface routed into the node's pod CIDRs: '' or what differs (a datapath that cannot be
   * read, pins removed, says so rather than throwing).
   */
  tablesDiffer(objects?: readonly Raw[]): string {
    return this.lab.plan.nodes
      .map((n) => {
        try {
          const distance = this.distance(n.name, objects);
          const attachments =
            this.datapath === 'ebpf'
              ? attachmentProblems(
                  { instance: `netns-${n.netns}` },
                  n.netns,
                  routedDevices(n.netns, this.podCidrs(n.name)),
                )
              : [];
          return distance === 0 && attachments.length === 0
            ? ''
            : `${n.name}: ${distance}${attachments.length > 0 ? ` (${attachments.join('; ')})` : ''}`;
        } catch (error) {
          return `${n.name}: ${(error as Error).message}`;
        }
      })
      .filter((line) => line !== '')
      .join(', ');
  }

  /** For `until`: true when every datapath equals a fresh render, else what differs (read once). */
  equalsFresh(): true | string {
    const difference = this.tablesDiffer();
    return difference === '' || difference;
  }

  /**
   * Waits until every agent says ready at ≥ revision and every table equals a fresh render;
   * returns how long that took, ms.
   */
  async converged(revision: number, timeoutMs = 30_000): Promise<number> {
    const started = performance.now();
    await until(
      `agents realize revision ${revision} and tables equal a fresh render`,
      async () => {
        for (const [node, agent] of this.agents) {
          const ready = await agent.readyz();
          const at = Number(/revision (\d+)/.exec(ready?.body ?? '')?.[1] ?? 0);
          if (ready?.status !== 200 || at < revision)
            return `${node}: ${ready ? `${ready.status} ${ready.body.trim()}` : 'no answer'}`;
        }
        return this.equalsFresh();
      },
      timeoutMs,
    ).catch((error: Error) => {
      error.message += `\n${this.logs()}`;
      throw error;
    });
    return performance.now() - started;
  }

  /** One probe of every pod pair on every port; disagreements with the reference of `cluster`. */
  async probe(timeoutMs = 500): Promise<{ from: string; to: string; port: number; observed: boolean }[]> {
    const pods = this.lab.plan.pods;
    const results = await Promise.all(
      pods.map(async (from) => {
        const targets = pods
          .filter((to) => to.id !== from.id)
          .flatMap((to) => PORTS.map((p) => ({ to: to.id, ip: to.ips[0]!, ...p })));
        const outcomes = await this.lab.agent(from.id).probe(
          targets.map((t) => ({ ip: t.ip, port: t.port, protocol: t.protocol })),
          timeoutMs,
        );
        return targets.map((t, i) => ({
          from: from.id,
          to: t.to,
          port: t.port,
          observed: outcomes[i]?.connected ?? false,
        }));
      }),
    );
    return results.flat();
  }

  /** Probed connections that the reference evaluator of `cluster` decides otherwise. */
  async disagreements(cluster: Cluster = this.cluster()): Promise<string[]> {
    const verdict = verdicts(cluster);
    return (await this.probe())
      .filter((r) => r.observed !== verdict(r.from, r.to, r.port))
      .map((r) => `${r.from} → ${r.to}:${r.port} ${r.observed ? 'connected' : 'blocked'}`);
  }

  /**
   * Probes continuously until the returned stop is called (or the world closes); stop resolves
   * to every connection seen that no state written so far (nor the first state, before any agent
   * ran) allows, and may be called again.
   */
  prober(): () => Promise<string[]> {
    let running = true;
    const violations = new Set<string>();
    const allowedBy: ((from: string, to: string, port: number) => boolean)[] = [];
    const loop = (async () => {
      while (running) {
        const results = await this.probe(300);
        // Judged after the probe, against every state held so far: a state is recorded before it
        // is written, so whatever the agents enforced during the probe is in the history by now.
        // (Judging against the history taken before the probe flagged connections that a state
        // written during the probe allowed.)
        for (let i = allowedBy.length; i < this.history.length; i++)
          allowedBy.push(verdicts(this.history[i]!));
        for (const r of results)
          if (r.observed && !allowedBy.some((allows) => allows(r.from, r.to, r.port)))
            violations.add(`${r.from} → ${r.to}:${r.port}`);
      }
    })();
    const stop = async (): Promise<string[]> => {
      running = false;
      await loop.catch(() => undefined);
      return [...violations];
    };
    // A trial that fails before stopping its prober has it stopped with the world, before the
    // lab goes (cleanups run last first): else its probes fail afterwards, unhandled.
    this.cleanups.push(() => stop().then(() => undefined));
    return stop;
  }

  /** The agents' logs, for a failing assertion's message. */
  logs(): string {
    return [...this.agents]
      .map(([n, a]) => `--- ${n}\n${a.log.slice(process.env.FAULT_LOG_LEVEL ? -20_000 : -3000)}`)
      .join('\n');
  }

  /**
   * What the world left behind after `close()`: namespaces of its lab, agent processes still
   * running (not zombies), etcd's data directory. Empty when it cleaned up after itself.
   */
  async leftovers(): Promise<string[]> {
    const left: string[] = [];
    const prefix = this.lab ? `pl-${this.lab.plan.name}-` : undefined;
    if (prefix) {
      const namespaces = (await run('ip', ['netns', 'list'])).stdout;
      for (const line of namespaces.split('\n'))
        if (line.startsWith(prefix)) left.push(`netns ${line.split(' ')[0]}`);
    }
    for (const [node, agent] of this.agents) {
      const pid = agent.child?.pid;
      if (pid === undefined) continue;
      try {
        const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
        // A busy machine reuses pids fast (a kernel worker, state I, took one here): still ours
        // only while its command line is an agent's.
        const ours = readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('\0agent\0');
        if (state !== 'Z' && ours) left.push(`agent of ${node} (pid ${pid}, state ${state})`);
      } catch {
        // gone
      }
    }
    if (this.etcd && existsSync(this.etcd.dataDir)) left.push(`etcd data ${this.etcd.dataDir}`);
    return left;
  }

  /** Removes everything the world made; a second call finds nothing left to do. */
  async close(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch {
        // the rest is removed all the same
      }
    }
  }
}

function verdicts(cluster: Cluster): (from: string, to: string, port: number) => boolean {
  const index = indexCluster(cluster);
  const endpoints = new Map(cluster.endpoints.map((e) => [e.id, e]));
  return (from, to, port) => {
    const a = endpoints.get(from);
    const b = endpoints.get(to);
    if (!a || !b) return false;
    return referenceVerdict(index, a, b, 4, { port, protocol: 'TCP' });
  };
}
