/**
 * `npm run bench -- ebpf [--runs N] [--seconds S] [--connections C] [--chunks K] [--load-once] [--agent-client]
 * [--host-conntrack] [--pin-cpu CPU] [--events N] [--scale F] [--skip-traffic] [--skip-per-packet] [--skip-updates]`: the eBPF
 * datapath's figures (root; clang, bpftool; iperf3 for throughput; conntrack for --host-conntrack).
 *
 * 1. Traffic through a one-node lab (client and server pods): no policy, nftables and eBPF, each
 *    with the node's policy rendered from the two pods plus a generated shape (a) cluster of about
 *    1, 100 and 10,000 policies, and the hook with a program that passes at once — attached as
 *    the datapath attaches (tcx links where the kernel has them) and on tc (clsact), as eBPF at
 *    ~1 policy is too. N rounds (5 unless told), each running every configuration once, starting
 *    at another one each round (each eBPF configuration has its own pinned maps, attached in its
 *    turn, loaded afresh for it unless `--load-once`, its connection table emptied first — or
 *    filled, for "table full": every insert evicts, as on a node that has made more connections
 *    than the table holds): TCP throughput
 *    (iperf3 for S seconds, 1 unless told) and new connections per second — C connections (20,000
 *    unless told; 5,000 before session 10) in turn, connect, echo, close, by a small C client
 *    against a C server (bench/ebpf-connrate.c; `--agent-client`: the Node pod agents, 100 at a
 *    time, as before session 7). Each figure is a ratio to no policy within its round, reported
 *    as the median of the rounds with their spread. Beside the wall rate, the CPU time the client
 *    and server spent per connection (their schedstat: for veth traffic the packets' whole path
 *    through the node, programs included, runs in their system calls): on a shared machine wall
 *    rates swing by tens of percent between rounds, CPU per connection by a few. A round's
 *    connections run in K chunks (4 unless told) and its CPU per connection is its least chunk's:
 *    other work only adds CPU time to a chunk (connectInTurn says how). The rounds run with
 *    kernel.bpf_stats_enabled off (it adds two clock reads to every program run, ~3 µs per
 *    connection here, which no policy does not pay); one more pass with it on then gives the
 *    programs' own run time per packet and packets per connection, apart for the iperf3 stream
 *    (established packets) and the connections. `--host-conntrack`: every configuration, no
 *    policy included, on a node with kube-proxy-like rules of its own, so the host tracks every
 *    connection as a real node's does (bench/ebpf-host-conntrack.ts). `--pin-cpu`: the C client and
 *    server both on that CPU (taskset): unpinned, the scheduler places them on one CPU or on two
 *    from one round to the next, and a connection's CPU doubles on two (session 11).
 * 2. Per-packet cost in the kernel for a new connection, by policies selecting one endpoint
 *    (1, 10, 100, 1,000; always 1,000 client pods): BPF_PROG_TEST_RUN on packets of new
 *    5-tuples (the whole lookup) from the n clients the policies name in turn, from all 1,000 in
 *    turn (the same addresses whatever n), from one client, and on a tracked one and its reply (the
 *    path established traffic takes),
 *    ns per packet as the kernel measures it (the median packet: preempted runs are outliers). Two more configurations split what grows with
 *    n: the same n policies with every client labelled for one of them (the program's work of a
 *    wide table, but the same entries on every packet), and one policy whose one rule names n
 *    selectors on n ports (a one-word table, but n different entries in turn). The datapath's
 *    columns run with its verdict cache (a judgement made already this epoch comes from one
 *    slot); the n-client and 1,000-client streams again, and the two splitting configurations,
 *    run with every packet judged by the tables (CFG_NO_VERDICT_CACHE): what a judgement costs.
 *    "n clients" grows the clients and the policies together; two judged columns hold one of
 *    them: one client under n policies, and n clients under one policy.
 *    Traffic runs eBPF at ~1 policy without the cache beside it too, and without the hand-over
 *    from from_pod to to_pod (CFG_NO_HANDOFF: each hook judging and looking up its own side).
 * 3. Policy change → maps committed at shape (a) node-0 (scale 1: 100,000 pods; node-0 renders
 *    its 100): pod label changes and policy port changes, from the pipeline's call to the epoch
 *    switch; the tail (old side, deletions) follows a grace period later and is timed apart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { generateShape } from '../src/generate/shapes.ts';
import type { Cluster } from '../src/model/types.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { NftablesRenderer } from '../src/datapaths/nftables/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { isRoot, nftRunner, run } from '../src/dataplane/index.ts';
import {
  attach,
  layout,
  detach,
  loadProgram,
  pinDir,
  unload,
  type PinLocation,
} from '../src/datapaths/ebpf/kernel/index.ts';
import { Lab } from '../src/lab/index.ts';
import { connectionRate, labObjects, podAndPolicyObjects, throughput } from './lab-traffic.ts';
import {
  emptyConnectionTable,
  fillConnectionTable,
  load,
  loadEmptyProgram,
  programStats,
  renderInto,
  say,
  setConfigFlag,
  type ProgramStats,
} from './ebpf-common.ts';
import { reportTraffic } from './ebpf-traffic-report.ts';
import { CONNRATE_PORT, connectInTurn, connrateTool, onCpu } from './connrate.ts';
import { flushHostConntrack, hostConntrackOn } from './ebpf-host-conntrack.ts';
import { perPacket } from './ebpf-per-packet.ts';
import { updates } from './ebpf-updates.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

export async function ebpfBenchmark(args: string[]): Promise<void> {
  if (!isRoot()) return say('the eBPF benchmark needs root (BPF programs, network namespaces); skipped');
  say(`load average at start: ${load()}`);
  if (!args.includes('--skip-traffic'))
    await traffic({
      runs: option(args, 'runs', 5),
      seconds: option(args, 'seconds', 1),
      connections: option(args, 'connections', args.includes('--agent-client') ? 2000 : 20_000),
      chunks: option(args, 'chunks', 4),
      agentClient: args.includes('--agent-client'),
      loadOnce: args.includes('--load-once'),
      hostConntrack: args.includes('--host-conntrack'),
      ...(args.includes('--pin-cpu') ? { pinCpu: option(args, 'pin-cpu', 0) } : {}),
    });
  if (!args.includes('--skip-per-packet')) perPacket();
  if (!args.includes('--skip-updates')) await updates(option(args, 'scale', 1), option(args, 'events', 200));
  say(`load average at end: ${load()}`);
}

export interface Configuration {
  readonly label: string;
  readonly policies: number;
  /** Makes this configuration the node's datapath. */
  readonly on: () => void | Promise<void>;
  /** Removes it again. */
  readonly off: () => void | Promise<void>;
  /** The eBPF programs' pinned paths (for their run-time statistics). */
  readonly programs?: readonly string[];
  /** Processes whose CPU time the connections cause beside the client's and server's (a flow reader). */
  readonly alsoCounted?: () => readonly number[];
}

/** What a benchmark adding configurations of its own to the traffic rounds builds them from. */
export interface TrafficContext {
  readonly netns: string;
  readonly stateRoot: string;
  /** The node's cluster at ~1 policy: the two pods and the policy between them. */
  readonly cluster: Cluster;
  /** The same as manifests (the lab's pods with their addresses). */
  readonly objects: readonly object[];
  /** Loads the eBPF programs at `location` with the cluster rendered and `flags` set (again for each turn unless --load-once). */
  readonly installed: (location: PinLocation, cluster: Cluster, flags: number) => void;
  /** On/off for programs at `location` attached to both pods' interfaces, as the datapath attaches them. */
  readonly attached: (location: PinLocation) => Pick<Configuration, 'on' | 'off' | 'programs'>;
}

/** The traffic part's options (the command line's, resolved). */
interface TrafficOptions {
  readonly runs: number;
  /** iperf3's seconds per configuration and round. */
  readonly seconds: number;
  /** Connections per configuration and round, in `chunks` runs. */
  readonly connections: number;
  readonly chunks: number;
  /** The Node pod agents as the connection-rate client (before session 7), not the C client. */
  readonly agentClient: boolean;
  /** Each eBPF configuration loaded once for the whole run (not afresh for each turn). */
  readonly loadOnce: boolean;
  /** Kube-proxy-like rules on the node in every configuration (bench/ebpf-host-conntrack.ts). */
  readonly hostConntrack: boolean;
  /** The CPU the connection-rate client and server are pinned to (both on one; unpinned unless given). */
  readonly pinCpu?: number;
  /** How many of the policy sizes (~1, ~100, ~10,000) to measure; all unless told. */
  readonly sizes?: number;
  /** More configurations (the flow benchmark's). */
  readonly more?: (context: TrafficContext) => Configuration[] | Promise<Configuration[]>;
  /** Only the configurations of these labels (all unless told). */
  readonly only?: readonly string[];
}

export async function traffic(options: TrafficOptions): Promise<void> {
  const { runs, seconds, connections, chunks, agentClient, loadOnce, hostConntrack } = options;
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-bench-'));
  const lab = await Lab.up('ebench', labObjects, loadFromObjects(labObjects).cluster, {
    stateRoot,
    nodes: 1,
  });
  const node = lab.plan.nodes[0];
  const serverPod = lab.plan.pods.find((p) => p.name === 'server');
  const client = lab.plan.pods.find((p) => p.name === 'client');
  if (!node || !serverPod || !client) throw new Error('lab plan without client and server');
  const locations: PinLocation[] = [];
  const iperf = await run('iperf3', ['--version']);
  if (iperf.code !== 0) say('iperf3 is not installed (apt-get install iperf3): throughput skipped');
  const stats = await run('sysctl', ['-n', 'kernel.bpf_stats_enabled']);
  await run('sysctl', ['-q', '-w', 'kernel.bpf_stats_enabled=0']);
  let server: ChildProcess | undefined;
  try {
    // Before the lab's own policy goes: the lab enforces with nftables; the benchmark swaps datapaths.
    await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: node.netns });
    if (hostConntrack) await hostConntrackOn(node.netns);
    // Each turn starts from an empty host connection table (bench/ebpf-host-conntrack.ts says why).
    const turn = async (configuration: Configuration) => {
      if (hostConntrack) await flushHostConntrack(node.netns);
      await configuration.on();
    };
    const sizes = [
      { label: '~1 policy', scale: 0 },
      { label: '~100 policies', scale: 0.00134 },
      { label: '~10,000 policies', scale: 0.134 },
    ]
      .slice(0, options.sizes ?? 3)
      .map(({ label, scale }) => {
        const objects: object[] = podAndPolicyObjects(lab);
        if (scale > 0) {
          const g = generateShape('a', { scale, seed: 3 });
          for (const o of [...g.namespaces, ...g.pods, ...g.policies]) objects.push(o);
        }
        return { label, cluster: loadFromObjects(objects).cluster };
      });
    let configurations: Configuration[] = [
      { label: 'no policy', policies: 0, on: () => undefined, off: () => undefined },
    ];
    for (const { label, cluster } of sizes)
      configurations.push({
        label: `nftables ${label}`,
        policies: cluster.policies.length,
        on: () => {
          const state = new ClusterState();
          const renderer = new NftablesRenderer({ state, runner: nftRunner({ netns: node.netns }) });
          new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] }).apply({
            type: 'resync',
            cluster,
          });
        },
        off: async () =>
          void (await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: node.netns })),
      });
    // The hook's own cost: the same attachment with a program that passes everything at once.
    // What eBPF costs beyond this is the program's work; what this costs is being on the hook at
    // all. The datapath attaches with tcx links where the kernel has them; the same programs on
    // tc (clsact, cls_bpf) are measured beside, which is what sessions before 7 attached with.
    const empty: PinLocation = { instance: `bench-${process.pid}-empty` };
    locations.push(empty);
    loadEmptyProgram(empty, stateRoot);
    const pods = [client, serverPod];
    // Each eBPF configuration's turn starts from a connection table in a known state: empty (a
    // round's connections are inserted without evicting any, as on a fresh node: rounds would
    // otherwise fill it after 65,536 connections and differ), or full (every insert evicts: a
    // long-lived node's steady state; "table full").
    // An eBPF configuration's program loaded afresh for each of its turns (unless --load-once):
    // the same object runs 5-10 % faster or slower from one load to the next (where the JIT places
    // it; docs/BENCHMARKS.md, session 10), which a configuration loaded once keeps for every round.
    const reloads = new Map<string, () => void>();
    const installed = (location: PinLocation, cluster: Cluster, flags: number): void => {
      const install = () => {
        unload(location);
        loadProgram(location);
        renderInto(location, 'node-0', cluster);
        if (flags) setConfigFlag(location, flags, true);
      };
      install();
      locations.push(location);
      if (!loadOnce) reloads.set(location.instance, install);
    };
    // An eBPF configuration delivers directly as a node does (a packet between two pods whose
    // two sides are current and allowed, in a connection the host does not translate, skips the
    // host's path and the receiver's hook), except "no direct delivery" and the empty programs.
    const attached = (
      location: PinLocation,
      tcOnly: boolean,
      table: 'empty' | 'full' | 'none' = 'empty',
      direct = true,
    ) => ({
      on: () => {
        reloads.get(location.instance)?.();
        if (table === 'empty') emptyConnectionTable(location);
        if (table === 'full') fillConnectionTable(location);
        for (const pod of pods) attach(location, node.netns, pod.hostInterface, { tcOnly });
        // The program learns where to deliver from the host's own frames (bpf/handoff.h);
        // "no direct delivery" turns that path off as `render --no-direct-delivery` does.
        if (table !== 'none') setConfigFlag(location, layout.CFG_NO_DIRECT, !direct);
      },
      off: async () => {
        for (const pod of pods) {
          detach(node.netns, pod.hostInterface, location);
          // detach leaves the clsact qdisc (other components' filters may be on it); this lab's
          // veths are the benchmark's own, and an empty qdisc left behind would still put every
          // later configuration's packets through tc's hook check, no policy's too.
          if (tcOnly)
            await run('tc', ['qdisc', 'del', 'dev', pod.hostInterface, 'clsact'], { netns: node.netns });
        }
      },
      programs: ['from_pod', 'to_pod'].map((p) => join(pinDir(location), 'progs', p)),
    });
    configurations.push({ label: 'hook, empty program', policies: 0, ...attached(empty, false, 'none') });
    configurations.push({ label: 'tc hook, empty program', policies: 0, ...attached(empty, true, 'none') });
    for (const [i, { label, cluster }] of sizes.entries()) {
      const location: PinLocation = { instance: `bench-${process.pid}-${i}` };
      installed(location, cluster, 0);
      configurations.push({
        label: `eBPF ${label}`,
        policies: cluster.policies.length,
        ...attached(location, false),
      });
      if (i === 0) {
        configurations.push({
          label: `eBPF ${label}, on tc`,
          policies: cluster.policies.length,
          ...attached(location, true),
        });
        configurations.push({
          label: `eBPF ${label}, no direct delivery`,
          policies: cluster.policies.length,
          ...attached(location, false, 'empty', false),
        });
        configurations.push({
          label: `eBPF ${label}, table full`,
          policies: cluster.policies.length,
          ...attached(location, false, 'full'),
        });
        // The same maps with every first packet judged by the tables (no verdict cache).
        const judged: PinLocation = { instance: `bench-${process.pid}-judged` };
        installed(judged, cluster, layout.CFG_NO_VERDICT_CACHE);
        configurations.push({
          label: `eBPF ${label}, no cache`,
          policies: cluster.policies.length,
          ...attached(judged, false),
        });
        // The same maps with each hook judging its own side (no hand-over from from_pod to
        // to_pod): the datapath before session 9.
        const alone: PinLocation = { instance: `bench-${process.pid}-alone` };
        installed(alone, cluster, layout.CFG_NO_HANDOFF);
        configurations.push({
          label: `eBPF ${label}, no hand-over`,
          policies: cluster.policies.length,
          ...attached(alone, false),
        });
      }
    }
    const [smallest] = sizes;
    if (options.more && smallest)
      configurations.push(
        ...(await options.more({
          netns: node.netns,
          stateRoot,
          cluster: smallest.cluster,
          objects: podAndPolicyObjects(lab),
          installed,
          attached: (location) => attached(location, false),
        })),
      );
    const only = options.only;
    if (only) configurations = configurations.filter((c) => only.includes(c.label));
    await run('sysctl', ['-q', '-w', 'net.ipv4.tcp_tw_reuse=1', 'net.ipv4.ip_local_port_range=1024 65000'], {
      netns: client.netns,
    });
    const tool = agentClient ? undefined : connrateTool(stateRoot);
    const serverIp = serverPod.ips[0] as string;
    if (tool) {
      const started = spawn(
        ...onCpu(options.pinCpu, 'nsenter', [
          `--net=/run/netns/${serverPod.netns}`,
          tool,
          'server',
          String(CONNRATE_PORT),
        ]),
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      server = started;
      await new Promise<void>((resolve, reject) => {
        started.once('error', reject);
        started.once('exit', (code) => reject(new Error(`the connection-rate server exited (${code})`)));
        started.stdout?.once('data', () => resolve());
      });
    }
    const serverPid = server?.pid ?? 0;
    const measureConnections = async (
      configuration: Configuration,
    ): Promise<{ rate: number; cpu: number }> =>
      tool
        ? connectInTurn(
            tool,
            client.netns,
            serverPid,
            serverIp,
            connections,
            chunks,
            options.pinCpu,
            configuration.alsoCounted?.() ?? [],
          )
        : { rate: await connectionRate(lab, client.id, serverIp, connections), cpu: NaN };
    // Per configuration, one value per round (rounds keep their index: ratios pair a round's values).
    const rates = configurations.map(() => [] as number[]);
    const cpus = configurations.map(() => [] as number[]);
    const throughputs = configurations.map(() => [] as number[]);
    for (let r = 0; r < runs; r++)
      // Each round starts at another configuration, so none always follows the same neighbour.
      for (let k = 0; k < configurations.length; k++) {
        const c = (k + r) % configurations.length;
        const configuration = configurations[c] as Configuration;
        await turn(configuration);
        const { rate, cpu } = await measureConnections(configuration);
        rates[c]?.push(rate);
        cpus[c]?.push(cpu);
        if (iperf.code === 0)
          throughputs[c]?.push(await throughput(serverPod.netns, client.netns, serverIp, seconds));
        await configuration.off();
      }
    // The programs' own cost, in one pass of its own with run-time statistics on.
    const iperfNs = configurations.map(() => [] as number[]);
    const iperfPackets = configurations.map(() => [] as number[]);
    const connectNs = configurations.map(() => [] as number[]);
    const connectPackets = configurations.map(() => [] as number[]);
    // Each program's run time per connection (from_pod, to_pod): the hand-over moves work between them.
    const connectEach = configurations.map(() => [] as number[]);
    const perPacket = (a: ProgramStats, b: ProgramStats) =>
      b.count > a.count ? (b.nanoseconds - a.nanoseconds) / (b.count - a.count) : NaN;
    await run('sysctl', ['-q', '-w', 'kernel.bpf_stats_enabled=1']);
    for (const [c, configuration] of configurations.entries()) {
      if (!configuration.programs) continue;
      await turn(configuration);
      const before = programStats(configuration.programs);
      await measureConnections(configuration);
      const connected = programStats(configuration.programs);
      if (iperf.code === 0) await throughput(serverPod.netns, client.netns, serverIp, seconds);
      const after = programStats(configuration.programs);
      connectNs[c]?.push(perPacket(before, connected));
      connectPackets[c]?.push((connected.count - before.count) / connections);
      connectEach[c] = connected.each.map((ns, i) => (ns - (before.each[i] ?? 0)) / connections);
      iperfNs[c]?.push(perPacket(connected, after));
      iperfPackets[c]?.push((after.count - connected.count) / seconds);
      await configuration.off();
    }
    reportTraffic(
      configurations,
      { throughputs, rates, cpus, iperfNs, iperfPackets, connectNs, connectPackets, connectEach },
      runs,
      seconds,
      connections,
      [
        tool ? 'C client and server, in turn' : 'Node pod agents, 100 at a time',
        ...(options.pinCpu !== undefined ? [`both on CPU ${options.pinCpu}`] : []),
        ...(hostConntrack ? ['host conntrack active (kube-proxy-like rules) in every configuration'] : []),
      ].join('; '),
    );
  } finally {
    server?.kill('SIGKILL');
    await run('sysctl', ['-q', '-w', `kernel.bpf_stats_enabled=${stats.stdout.trim() || '0'}`]);
    for (const location of locations) unload(location);
    lab.close();
    await Lab.down('ebench', { stateRoot });
    rmSync(stateRoot, { recursive: true, force: true });
  }
}
