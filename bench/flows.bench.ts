/**
 * `npm run bench -- flows [--runs N] [--connections C] [--rate R] [--seconds S] [--trials T]
 * [--skip-traffic] [--skip-feed] [--skip-follow] [--follow-datapath nftables|ebpf]`: what flow reporting (`agent --flow-log`, issue
 * 39) costs and how fast it is (root; clang and bpftool; the follow part needs `npm run build`).
 *
 * 1. traffic — the eBPF benchmark's connection rounds (bench/ebpf.bench.ts: the C client and
 *    server in a one-node lab, CPU per connection as the least chunk's) on five configurations: no
 *    policy; nftables and eBPF at ~1 policy without flow reporting, and with it — the nftables
 *    table's flow-log rules or the eBPF programs' CFG_FLOW_EVENTS, each with a reader process
 *    doing what the agent does with the reports (bench/flow-reader-child.ts: read on the agent's schedule,
 *    name each connection with the reference evaluator, aggregate), whose CPU counts into each
 *    connection's. Issue 39's figures: eBPF with reporting ≥ 95 % of no policy's connections per
 *    CPU-second; nftables with reporting ≤ 3 % below nftables without.
 * 2. feed — R new connections a second (100,000 unless told) for S seconds (10) through the
 *    eBPF program itself (bench/flow-feed.c: BPF_PROG_TEST_RUN of to_pod on new 5-tuples, on one
 *    CPU: counted by kind in the kernel, at most 2,000 new kinds per 100 ms, then one in 64
 *    weighted), read by the reader process: connections reported (weighted) against made, the
 *    entries read and the connections lost, the reader's CPU and memory. Two mixes: a
 *    node's steady traffic (2,000 distinct connections again and again) and a scan (every
 *    connection to a new port: nothing repeats) and a sweep (every connection from a new address
 *    outside the cluster). Issue 39's figure: 100,000 new connections a second reported with
 *    ≤ 50 MB of agent memory.
 * 3. follow — a lab with a control plane and `--flow-log` agents (nftables unless
 *    `--follow-datapath ebpf`: its counts are read two polls after they are made), `palisade flows
 *    --follow -o json` running: T connections (20) each to a new port, from the moment before the
 *    connecting process starts to the moment its record is printed. Figure: ≤ 1 s.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { isRoot, nftRunner, run } from '../src/dataplane/index.ts';
import { NftablesRenderer } from '../src/datapaths/nftables/index.ts';
import { DEFAULT_FLOW_LOG_GROUP } from '../src/datapaths/nftables/flow-log.ts';
import { layout, loadProgram, pinDir, unload, type PinLocation } from '../src/datapaths/ebpf/kernel/index.ts';
import { loadCluster, loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { loadControlPlaneLab, type ControlPlaneLab as ControlPlaneLabType } from '../src/lab/index.ts';
import { traffic, type Configuration, type TrafficContext } from './ebpf.bench.ts';
import { processCpuNs } from './connrate.ts';
import { load, renderInto, say, setConfigFlag } from './ebpf-common.ts';
import { median } from './stats.ts';
import { CLIENTS, selectedByObjects } from './ebpf-per-packet.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

export async function flowsBenchmark(args: string[]): Promise<void> {
  if (!isRoot()) return say('the flows benchmark needs root (network namespaces, nftables, BPF); skipped');
  say(`load average at start: ${load()}`);
  if (!args.includes('--skip-traffic'))
    await traffic({
      runs: option(args, 'runs', 5),
      seconds: 1,
      connections: option(args, 'connections', 20_000),
      chunks: 4,
      agentClient: false,
      loadOnce: false,
      hostConntrack: false,
      sizes: 1,
      more: flowConfigurations,
      only: [
        'no policy',
        'nftables ~1 policy',
        'nftables ~1 policy, flow log',
        'eBPF ~1 policy',
        'eBPF ~1 policy, flow events',
      ],
    });
  if (!args.includes('--skip-feed'))
    for (const mix of ['steady', 'scan', 'sweep'] as const)
      await feed(option(args, 'rate', 100_000), option(args, 'seconds', 10), mix);
  const datapath = args[args.indexOf('--follow-datapath') + 1] === 'ebpf' ? 'ebpf' : 'nftables';
  if (!args.includes('--skip-follow')) await follow(option(args, 'trials', 20), datapath);
  say(`load average at end: ${load()}`);
}

/** The reader process (bench/flow-reader-child.ts) and what it has read. */
interface ReaderStats {
  readonly events: number;
  readonly mismatches: number;
  readonly lost: number;
  readonly records: number;
  readonly connections: number;
  readonly rssBytes: number;
  readonly maxRssBytes: number;
  readonly heapBytes: number;
  readonly externalBytes: number;
}

class Reader {
  private child: ChildProcess | undefined;
  /** The reader's CPU time, ns, once it was ready (its start-up — loading the cluster — left out). */
  private cpuAtReady = 0;

  /** CPU ns the reader spent since it was ready. */
  cpuSinceReady(): number {
    const pid = this.child?.pid;
    return pid === undefined ? 0 : processCpuNs(pid) - this.cpuAtReady;
  }

  async start(config: object): Promise<void> {
    const child = fork(join(import.meta.dirname, 'flow-reader-child.js'), [JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      // As `palisade agent` runs — not with the benchmark's own V8 flags (a 64 MB young
      // generation) — but for a full collection before the heap is measured.
      execArgv: [
        '--expose-gc',
        // PALISADE_BENCH_READER_PROFILE=DIR: a V8 CPU profile of each reader there.
        ...(process.env.PALISADE_BENCH_READER_PROFILE
          ? ['--cpu-prof', '--cpu-prof-dir', process.env.PALISADE_BENCH_READER_PROFILE]
          : []),
      ],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`the flow reader exited (${code})`)));
      child.once('message', () => resolve());
    });
    child.removeAllListeners('exit');
    this.cpuAtReady = processCpuNs(child.pid ?? 0);
  }

  pids(): number[] {
    return this.child?.pid !== undefined ? [this.child.pid] : [];
  }

  stats(): Promise<ReaderStats> {
    const child = this.child;
    if (!child) return Promise.reject(new Error('no reader'));
    return new Promise((resolve) => {
      child.once('message', (m) => resolve(m as ReaderStats));
      child.send('stats');
    });
  }

  async stop(): Promise<(ReaderStats & { cpuNs: number }) | undefined> {
    const child = this.child;
    if (!child) return undefined;
    // Its CPU before the stats' full collection (forced for the heap figure, not the reading's).
    const cpuNs = this.cpuSinceReady();
    const stats = { ...(await this.stats()), cpuNs };
    this.child = undefined;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.disconnect();
    await exited;
    return stats;
  }
}

/** The two configurations with flow reporting, each with its reader process. */
function flowConfigurations(context: TrafficContext): Configuration[] {
  const objectsFile = join(context.stateRoot, 'flow-objects.json');
  writeFileSync(objectsFile, JSON.stringify(context.objects));
  const policies = context.cluster.policies.length;
  const reader = new Reader();
  const totals = new Map<
    string,
    {
      events: number;
      lost: number;
      mismatches: number;
      turns: number;
      perEvent: number[];
      perConnection: number[];
    }
  >();
  const count = (label: string, stats: (ReaderStats & { cpuNs: number }) | undefined): void => {
    const total = totals.get(label) ?? {
      events: 0,
      lost: 0,
      mismatches: 0,
      turns: 0,
      perEvent: [],
      perConnection: [],
    };
    if (stats) {
      total.events += stats.events;
      total.lost += stats.lost;
      total.mismatches += stats.mismatches;
      total.turns++;
      if (stats.events > 0) total.perEvent.push(stats.cpuNs / stats.events);
      if (stats.connections > 0) total.perConnection.push(stats.cpuNs / stats.connections);
    }
    totals.set(label, total);
    say(
      `  ${label}: ${total.turns} turns, ${total.events} events read (eBPF: entries, each a kind of connection counted in the kernel), ${total.lost} connections lost, ${total.mismatches} named otherwise than the kernel; the reader's CPU per event ${(median(total.perEvent) / 1000).toFixed(1)} µs, per connection reported ${(median(total.perConnection) / 1000).toFixed(2)} µs (medians of the turns; its idle polls included)`,
    );
  };
  const nftLabel = 'nftables ~1 policy, flow log';
  const ebpfLabel = 'eBPF ~1 policy, flow events';
  const location: PinLocation = { instance: `bench-${process.pid}-flows` };
  context.installed(location, context.cluster, layout.CFG_FLOW_EVENTS);
  const ebpf = context.attached(location);
  return [
    {
      label: nftLabel,
      policies,
      on: async () => {
        const state = new ClusterState();
        const renderer = new NftablesRenderer({
          state,
          runner: nftRunner({ netns: context.netns }),
          flowLog: { group: DEFAULT_FLOW_LOG_GROUP },
        });
        new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] }).apply({
          type: 'resync',
          cluster: context.cluster,
        });
        await reader.start({ datapath: 'nftables', netns: context.netns, objectsFile, node: 'node-0' });
      },
      off: async () => {
        count(nftLabel, await reader.stop());
        await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: context.netns });
      },
      alsoCounted: () => reader.pids(),
    },
    {
      label: ebpfLabel,
      policies,
      on: async () => {
        await ebpf.on();
        await reader.start({ datapath: 'ebpf', instance: location.instance, objectsFile, node: 'node-0' });
      },
      off: async () => {
        count(ebpfLabel, await reader.stop());
        await ebpf.off();
      },
      ...(ebpf.programs ? { programs: ebpf.programs } : {}),
      alsoCounted: () => reader.pids(),
    },
  ];
}

/**
 * `rate` new connections a second for `seconds` through the program (a tick every 10 ms runs the
 * tick's share), the reader draining the counts meanwhile; then what was reported.
 */
async function feed(rate: number, seconds: number, mix: 'steady' | 'scan' | 'sweep'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-bench-feed-'));
  const location: PinLocation = { instance: `bench-feed-${process.pid}` };
  const reader = new Reader();
  try {
    // The per-packet benchmark's cluster: 1,000 clients on n2, the db on n1 letting them in on 1000.
    const objects = selectedByObjects(1);
    const objectsFile = join(dir, 'objects.json');
    writeFileSync(objectsFile, JSON.stringify(objects));
    loadProgram(location);
    renderInto(location, 'n1', loadFromObjects(objects).cluster);
    setConfigFlag(location, layout.CFG_FLOW_EVENTS, true);
    await reader.start({ datapath: 'ebpf', instance: location.instance, objectsFile, node: 'n1' });
    const [pid] = reader.pids();
    const before = await reader.stats();
    const cpuBefore = processCpuNs(pid ?? 0);
    const generated = await run(feedTool(dir), [
      join(pinDir(location), 'progs', 'to_pod'),
      String(rate),
      String(seconds),
      mix,
      String(CLIENTS),
    ]);
    if (generated.code !== 0) throw new Error(`flow-feed failed: ${generated.stderr}`);
    const [made, elapsed, allowed] = generated.stdout.trim().split(' ').map(Number) as [
      number,
      number,
      number,
    ];
    // The reader polls every 100 ms while counts come (then backs off): what was written is read by then.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await reader.stats();
    const cpu = (processCpuNs(pid ?? 0) - cpuBefore) / 1e9;
    const reported = after.connections - before.connections;
    say(
      `\nflow feed (${mix}): ${made.toLocaleString('en')} new connections in ${elapsed.toFixed(1)} s (${Math.round(made / elapsed).toLocaleString('en')}/s through to_pod on one CPU, ${allowed.toLocaleString('en')} allowed)`,
    );
    say(
      `  reported: ${reported.toLocaleString('en')} connections (weighted; ${((reported / made) * 100).toFixed(1)} % of made) from ${(after.events - before.events).toLocaleString('en')} events (entries read), ${after.lost} connections lost, ${after.records} records (${after.mismatches} named otherwise than the kernel)`,
    );
    say(
      `  reader: ${((cpu / elapsed) * 100).toFixed(0)} % of a CPU; RSS ${(before.rssBytes / 2 ** 20).toFixed(0)} MiB before, ${(after.rssBytes / 2 ** 20).toFixed(0)} MiB after (+${((after.rssBytes - before.rssBytes) / 2 ** 20).toFixed(0)} MiB), peak ${(after.maxRssBytes / 2 ** 20).toFixed(0)} MiB; heap kept ${(before.heapBytes / 2 ** 20).toFixed(0)} → ${(after.heapBytes / 2 ** 20).toFixed(0)} MiB, external ${(before.externalBytes / 2 ** 20).toFixed(0)} → ${(after.externalBytes / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    await reader.stop().catch(() => undefined);
    unload(location);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The feed's generator (bench/flow-feed.c), compiled into `dir`. */
function feedTool(dir: string): string {
  const source = join(import.meta.dirname, '..', '..', 'bench', 'flow-feed.c');
  const binary = join(dir, 'flow-feed');
  execFileSync('clang', ['-O2', '-Wall', '-o', binary, source, '-lbpf']);
  return binary;
}

/** Connections in a lab with a control plane, each timed until `flows --follow` prints its record. */
async function follow(trials: number, datapath: 'nftables' | 'ebpf'): Promise<void> {
  const { ControlPlaneLab } = await loadControlPlaneLab();
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-bench-follow-'));
  const name = `bfl${process.pid % 100000}`;
  const examples = join(import.meta.dirname, '..', '..', 'examples');
  const files = ['shop-running', 'shop/namespaces.yaml', 'shop/policies-shop.yaml'].map((f) =>
    join(examples, f),
  );
  let lab: ControlPlaneLabType | undefined;
  let watcher: ChildProcess | undefined;
  try {
    const loaded = await loadCluster(files);
    lab = await ControlPlaneLab.up(
      name,
      loaded.rawObjects.map((r) => r.value as object),
      loaded.cluster,
      { stateRoot, datapath, flowLog: true },
    );
    const from = lab.plan.pods.find((p) => p.id.startsWith('kube-system/coredns'));
    const to = lab.plan.pods.find((p) => p.id.startsWith('monitoring/prometheus'));
    if (!from || !to) throw new Error('the shop lab has no coredns or prometheus pod');
    const cliPath = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'palisade.js');
    watcher = spawn(
      process.execPath,
      [cliPath, 'flows', '--lab', name, '--state-dir', stateRoot, '--follow', '-o', 'json', '--to', to.id],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const seen = new Map<number, number>();
    const waiting = new Map<number, () => void>();
    createInterface({ input: watcher.stdout! }).on('line', (line) => {
      const record = JSON.parse(line) as { port: number; src: { pod?: string } };
      if (record.src.pod !== from.id || seen.has(record.port)) return;
      seen.set(record.port, performance.now());
      waiting.get(record.port)?.();
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const latencies: number[] = [];
    for (let i = 0; i < trials; i++) {
      const port = 20_000 + i;
      const arrived = new Promise<void>((resolve) => waiting.set(port, resolve));
      const started = performance.now();
      // A SYN from coredns to prometheus (neither side isolates it: allowed, then refused by the
      // pod since nothing listens there — the kernel's verdict is what is reported).
      await run('bash', ['-c', `exec 3<>/dev/tcp/${to.ips[0]}/${port}`], { netns: from.netns });
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000));
      if ((await Promise.race([arrived, timeout])) === 'timeout') {
        say(`  connection to port ${port}: no record within 5 s`);
        continue;
      }
      latencies.push((seen.get(port) ?? NaN) - started);
    }
    latencies.sort((a, b) => a - b);
    say(
      `\nflows --follow: ${latencies.length} of ${trials} connections printed; connect → printed median ${median(latencies).toFixed(0)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(0)} ms (${datapath}, the agent's poll: 100 ms while reports come, up to 400 ms while none do)`,
    );
  } finally {
    watcher?.kill('SIGTERM');
    lab?.close();
    await ControlPlaneLab.down(name, { stateRoot }).catch(() => undefined);
    rmSync(stateRoot, { recursive: true, force: true });
  }
}
