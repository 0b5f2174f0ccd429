/**
 * `npm run bench -- tiers [--scale 1] [--admin 1000] [--lookups N] [--runs 3] [--vpp] [--mapstate-only]
 * [--lookups-only] [--sweep 10,100,1000] [--walk]`: ordered cluster policy at
 * scale — shape a (scale × 100,000 pods, 75,000 NetworkPolicies) plus `--admin`
 * AdminNetworkPolicies of 25 rules each:
 * - the compiler: every pod's tables, NetworkPolicy and tiered (Admin/Baseline rule lists);
 * - building the classifier path: the classifier with its Admin-tier tables (slots in precedence
 *   order) next to the NetworkPolicy maps, time and heap;
 * - lookups per second through it (IPv4 numeric path, one core), the reference side by side,
 *   and agreement on a sample;
 * - the CFP's MapState for the most-selected pod's Admin ingress rules (identities: pod
 *   addresses): build time and entries, then inserting one new 25-rule AdminNetworkPolicy at a
 *   priority between existing ones — latency, changes, and whether any existing entry was
 *   renumbered (it must not be);
 * - with `--vpp`, the VPP stacks for one node (tiers-vpp.bench.ts);
 * - with `--mapstate-only`, the MapState figures alone (no compile or classifier);
 * - with `--lookups-only`, the classifier's build and lookups alone; `--sweep` repeats them for
 *   each number of AdminNetworkPolicies listed (flat or not in the number of ANPs), and `--walk`
 *   takes tier verdicts by walking the rules (the form before tier decisions) to compare;
 * - with `--compile-only`, the compiler's figures alone (wall and CPU time per run).
 */
import { readFileSync } from 'node:fs';
import { Classifier, PROTOCOL_INDEX, type ClassifierPacket } from '../src/classifier/index.ts';
import { generateAdminPolicies } from '../src/generate/admin-policies.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { seededRandom } from '../src/generate/random.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { clusterPolicyLabel } from '../src/model/cluster-policy.ts';
import { rulePrecedenceKey } from '../src/model/precedence.ts';
import type { Cluster, ClusterPolicy, ClusterRule, Endpoint, Protocol } from '../src/model/types.ts';
import { MapState, portRangePrefixes, type MapRule, type PortPrefix } from '../src/ordered/index.ts';
import { evaluate, indexCluster } from '../src/semantics/index.ts';
import { selectorMatches } from '../src/model/selector.ts';
import { namespaceMatches, subjectSelects } from '../src/model/cluster-policy.ts';
import { ClusterState } from '../src/state/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { median } from './stats.ts';
import { timeRunsWithCpu } from './cpu-time.ts';
import { reportFigure } from './report.ts';
import { vppTierFigures } from './tiers-vpp.bench.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MB`;

export function tiersBenchmark(args: string[]): void {
  const sweep = args.indexOf('--sweep');
  if (sweep < 0) return tiersAt(args, option(args, 'admin', 1000));
  for (const admins of (args[sweep + 1] ?? '').split(',').map(Number)) tiersAt(args, admins);
}

function tiersAt(args: string[], admins: number): void {
  const scale = option(args, 'scale', 1);
  const lookups = option(args, 'lookups', 1_000_000);
  const runs = option(args, 'runs', 3);
  const generated = generateShape('a', { scale, seed: 1 });
  const adminPolicies = generateAdminPolicies(admins, 1);
  const t = performance.now();
  const { cluster } = loadFromObjects([
    ...generated.namespaces,
    ...generated.pods,
    ...generated.policies,
    ...adminPolicies,
  ]);
  const load = performance.now() - t;
  const rules = cluster.clusterPolicies.reduce((n, p) => n + p.ingress.length + p.egress.length, 0);
  process.stdout.write(
    `shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} NetworkPolicies, ${cluster.clusterPolicies.length} AdminNetworkPolicies (${rules} rules); loaded in ${(load / 1000).toFixed(1)} s\n`,
  );
  if (args.includes('--mapstate-only')) {
    mapStateFigures(
      cluster,
      cluster.endpoints.filter((e) => e.ips.length > 0 && !e.hostNetwork),
    );
    return;
  }
  if (args.includes('--lookups-only')) {
    lookupFigures(cluster, scale, admins, lookups, runs, args.includes('--walk'));
    return;
  }
  // The compiler: every pod's NetworkPolicy tables and tiered tables, from the manifests in memory.
  const compiles: number[] = [];
  const compileCpu: number[] = [];
  let tiered = 0;
  for (let run = 0; run < runs; run++) {
    globalThis.gc?.();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const pipeline = new PolicyPipeline();
    pipeline.apply({ type: 'resync', cluster });
    compiles.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    compileCpu.push((used.user + used.system) / 1000);
    tiered = 0;
    for (const [, tables] of pipeline.compiledPods()) if (tables.ingressTiers || tables.egressTiers) tiered++;
  }
  reportFigure({
    name: `tiers ×${scale} + ${admins} ANPs: compile (all pods' tables)`,
    value: median(compiles) / 1000,
    unit: 's',
    runs: compiles.map((c) => c / 1000),
    ...(scale === 1 ? { target: '≤ 8 s, ≤ 2 GB' } : {}),
  });
  reportFigure({
    name: `tiers ×${scale}: RSS after compile`,
    value: process.memoryUsage().rss / 2 ** 20,
    unit: 'MiB',
  });
  process.stdout.write(
    `compiler (all pods' tables, tiered ones included): ${(median(compiles) / 1000).toFixed(2)} s (median of ${runs}: ${compiles.map((b) => (b / 1000).toFixed(2)).join(', ')}; CPU ${compileCpu.map((b) => (b / 1000).toFixed(2)).join(', ')} s), ${tiered} pods with tiered tables, peak RSS ${mb(process.resourceUsage().maxRSS * 1024)}\n`,
  );
  if (args.includes('--compile-only')) return;
  const pods = lookupFigures(cluster, scale, admins, lookups, runs, args.includes('--walk'));
  mapStateFigures(cluster, pods);
  if (args.includes('--vpp')) vppTierFigures(cluster, runs);
}

/**
 * The classifier's build (time, heap, the tier decisions' memory) and its lookups: CPU time of
 * each pass over the packets (the first pass computes the tier decisions it meets; the median
 * is of the passes after it), and agreement with the reference on a sample. Returns the pods.
 */
function lookupFigures(
  cluster: Cluster,
  scale: number,
  admins: number,
  lookups: number,
  runs: number,
  walk: boolean,
): Endpoint[] {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const builds: number[] = [];
  let classifier: Classifier | undefined;
  for (let run = 0; run < runs; run++) {
    classifier = undefined;
    globalThis.gc?.();
    const t = performance.now();
    const state = new ClusterState();
    state.resync(cluster);
    classifier = new Classifier(state, { tiers: true, tierRuleWalk: walk });
    builds.push(performance.now() - t);
  }
  globalThis.gc?.();
  const heap = process.memoryUsage().heapUsed - heapBefore;
  const c = classifier as Classifier;
  const form = walk ? 'rule walk' : 'tier decisions';
  reportFigure({
    name: `tiers ×${scale} + ${admins} ANPs: classifier build (${form})`,
    value: median(builds) / 1000,
    unit: 's',
    runs: builds.map((b) => b / 1000),
  });
  process.stdout.write(
    `compiled path (classifier: NetworkPolicy maps + Admin tier tables, ${form}): built in ${(median(builds) / 1000).toFixed(2)} s (median of ${runs}: ${builds.map((b) => (b / 1000).toFixed(2)).join(', ')}), heap ${mb(heap)}, peak RSS ${mb(process.memoryUsage().rss)}\n`,
  );

  const pods = cluster.endpoints.filter((e) => e.ips.length > 0 && !e.hostNetwork);
  const list = packets(pods, lookups);
  const count = list.length;
  // Columns, as a datapath holds packets (walking a million objects measures the objects).
  const src = new Uint32Array(count);
  const dst = new Uint32Array(count);
  const protocol = new Uint8Array(count);
  const port = new Uint16Array(count);
  list.forEach((p, i) => {
    src[i] = p.srcV4;
    dst[i] = p.dstV4;
    protocol[i] = PROTOCOL_INDEX[p.protocol];
    port[i] = p.port;
  });
  let allowed = 0;
  const memoryBefore = randomReadNs();
  const passes = timeRunsWithCpu(6, () => {
    allowed = 0;
    for (let i = 0; i < count; i++)
      if (c.allowsV4Indexed(src[i] as number, dst[i] as number, protocol[i] as number, port[i] as number))
        allowed++;
  });
  const memoryAfter = randomReadNs();
  const rate = (ms: number): number => count / (ms / 1000);
  const [firstWall, ...wall] = passes.millis.map(rate);
  const [firstCpu, ...cpu] = passes.cpuMillis.map(rate);
  const index = indexCluster(cluster);
  const byIp = new Map(pods.map((e) => [Number((e.ips[0] as ClassifierPacket['src']).value), e]));
  const sample = list.slice(0, 2_000);
  let disagreements = 0;
  const t = performance.now();
  for (const p of sample) {
    const v = evaluate(index, {
      src: { kind: 'endpoint', endpoint: byIp.get(p.srcV4) as Endpoint },
      dst: { kind: 'endpoint', endpoint: byIp.get(p.dstV4) as Endpoint },
      protocol: p.protocol,
      port: p.port,
    });
    if (v.allowed !== c.allowsV4(p.srcV4, p.dstV4, p.protocol, p.port)) disagreements++;
  }
  const reference = sample.length / ((performance.now() - t) / 1000);
  reportFigure({
    name: `tiers ×${scale} + ${admins} ANPs: classifier lookups per CPU-s, ${form} (${disagreements} of ${sample.length} disagree with the reference)`,
    value: median(cpu) / 1e6,
    unit: 'M/s',
    runs: cpu.map((r) => r / 1e6),
    target: '≥ 5 M/s, flat in ANPs',
  });
  const memory = c.memory;
  const sizes = c.tierDecisionSizes;
  const perPod = (bytes: number): string => (bytes / pods.length).toFixed(0);
  process.stdout.write(
    `lookups (${form}): ${(median(cpu) / 1e6).toFixed(2)} M per CPU-s, wall ${(median(wall) / 1e6).toFixed(2)} M/s (median of 5 passes over ${count} packets after a first pass at ${((firstCpu as number) / 1e6).toFixed(2)} M per CPU-s, wall ${((firstWall as number) / 1e6).toFixed(2)}; ${allowed} allowed) vs ${(reference / 1e3).toFixed(2)} k/s reference; ${disagreements} disagreements on ${sample.length} sampled packets\n` +
      `  passes: ${cpu.map((r) => (r / 1e6).toFixed(2)).join(', ')} M per CPU-s; a random read from 16 MiB (the host's memory, not this code): ${memoryBefore.toFixed(0)} ns before the passes, ${memoryAfter.toFixed(0)} ns after (main thread's CPU time)\n` +
      `  lookup structures: records ${mb(memory.records)}, packed tables ${mb(memory.tables)} (live blocks ${mb(memory.tablesUsed)}), tier decisions ${mb(memory.tierDecisions)} (${sizes.rows} rows, ${sizes.peerClasses} peer classes, ${sizes.portClasses} port classes)\n` +
      `  per pod: records ${perPod(memory.records)} B (with the overflowing group lists), live table blocks ${perPod(memory.tablesUsed)} B\n`,
  );
  return pods;
}

/** Packets between random pods, and within a namespace (where most policies apply). */
function packets(pods: readonly Endpoint[], count: number) {
  const ports: [number, Protocol][] = [
    [8080, 'TCP'],
    [8443, 'TCP'],
    [53, 'UDP'],
    [9050, 'TCP'],
  ];
  // mulberry32: an LCG's low bits repeat with short periods, which correlated sources with
  // destinations and kept lookups in cache (figures before 2026-11-22 were flattered by it).
  const random = seededRandom(7);
  const next = (n: number): number => Math.floor(random() * n);
  return Array.from({ length: count }, (_, i) => {
    const [port, protocol] = ports[next(ports.length)] as [number, Protocol];
    const from = next(pods.length);
    const to = i % 2 === 0 ? next(pods.length) : Math.min(pods.length - 1, from - (from % 4) + next(4));
    return {
      srcV4: Number((pods[from]?.ips[0] as ClassifierPacket['src']).value),
      dstV4: Number((pods[to]?.ips[0] as ClassifierPacket['src']).value),
      protocol,
      port,
    };
  });
}

const PROTOCOL_NUMBER: Record<Protocol, number> = { TCP: 6, UDP: 17, SCTP: 132 };

/**
 * The main thread's time on a CPU so far, ms (the first field of its schedstat, ns), or NaN where
 * there is none. Unlike process CPU it leaves out the collector's and the optimizing compiler's
 * threads, and unlike wall time it leaves out the waits for a core on the shared machine: under
 * load it stays near what a quiet run's wall time is.
 */
function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, 'utf8');
    return Number(stat.split(' ')[0]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/**
 * What one dependent random read from a 16 MiB region costs this process now, ns of the main
 * thread's CPU time (a pointer chase over random 64-byte lines; ~40 ms). A ×1 lookup waits for
 * one or two such reads (its records and blocks are tens of MiB), so printed beside the lookups
 * it tells a slow process that met slow memory (the neighbours' traffic, the host) from slow
 * code: in session 10 the figure moved with it, not with V8's compilation.
 */
function randomReadNs(): number {
  const lines = (16 << 20) / 64;
  const order = Int32Array.from({ length: lines }, (_, i) => i);
  const random = seededRandom(11);
  for (let i = lines - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const next = new Int32Array(lines * 16);
  for (let i = 0; i < lines; i++) next[(order[i] as number) * 16] = (order[(i + 1) % lines] as number) * 16;
  const reads = 1_000_000;
  let at = 0;
  for (let i = 0; i < reads / 4; i++) at = next[at] as number;
  const started = mainThreadCpuMs();
  for (let i = 0; i < reads; i++) at = next[at] as number;
  const ns = ((mainThreadCpuMs() - started) * 1e6) / reads;
  // The chase's end keeps the loop from being optimized away.
  return at < 0 ? Number.NaN : ns;
}

const ACTION = { allow: 'allow', deny: 'deny', pass: 'pass' } as const;

/** The CFP's map for one pod's Admin ingress rules, with pod addresses as identities. */
function mapStateFigures(cluster: Cluster, pods: readonly Endpoint[]): void {
  const labelsOf = (ns: string) => cluster.namespaces.get(ns)?.labels;
  const admin = cluster.clusterPolicies.filter((p) => p.tier === 'Admin' && p.ingress.length > 0);
  // The pod the most Admin policies select.
  let subject = pods[0] as Endpoint;
  let most = -1;
  const seen = new Set<string>();
  for (const pod of pods) {
    const key = `${pod.namespace}|${JSON.stringify(pod.labels)}`;
    if (seen.has(key) || seen.size > 2000) continue;
    seen.add(key);
    const n = admin.filter((p) => subjectSelects(p.subject, labelsOf(pod.namespace), pod)).length;
    if (n > most) [subject, most] = [pod, n];
  }
  const selecting = admin.filter((p) => subjectSelects(p.subject, labelsOf(subject.namespace), subject));
  const identityOf = new Map(pods.map((p, i) => [p, i]));
  const rulesOf = (
    policy: ClusterPolicy,
    priorityOf = (r: ClusterRule) => rulePrecedenceKey(policy, r.index),
  ) =>
    policy.ingress.flatMap((rule) =>
      mapRules(rule, clusterPolicyLabel(policy), priorityOf(rule), subject, pods, identityOf, labelsOf),
    );
  let t = performance.now();
  const rules = selecting.flatMap((p) => rulesOf(p));
  const map = new MapState(rules);
  const build = performance.now() - t;
  const entries = map.entries();

  // A new policy (25 rules, 13 of them ingress) at a priority between the existing ones.
  const template = cluster.clusterPolicies[0] as ClusterPolicy;
  const fresh: ClusterPolicy = {
    ...template,
    name: 'inserted',
    priority: 500,
    subject: { namespaceSelector: { requirements: [], key: '' } },
  };
  const added = rulesOf(fresh);
  const before = new Map(
    entries.map((e) => [`${e.protocol}/${e.port.len}/${e.port.value}/${e.identity}`, e]),
  );
  const latencies: number[] = [];
  // CPU time too: on the shared machine wall time mostly measures the neighbours.
  const cpuTimes: number[] = [];
  const mainTimes: number[] = [];
  let changes = 0;
  for (let run = 0; run < 5; run++) {
    // Each run inserts into a fresh copy, so runs measure the same insertion.
    const copy = run === 0 ? map : new MapState(rules);
    // The copy's garbage is collected first, and the collector's background threads are given
    // time to finish sweeping: the insertion is billed for its own work only.
    globalThis.gc?.();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    const cpu = process.cpuUsage();
    const main = mainThreadCpuMs();
    const started = performance.now();
    const changed = copy.addRules(added);
    latencies.push(performance.now() - started);
    mainTimes.push(mainThreadCpuMs() - main);
    const used = process.cpuUsage(cpu);
    cpuTimes.push((used.user + used.system) / 1000);
    if (run === 0) changes = changed.length;
  }
  // Existing rules keep their priorities (dense precedence keys): an entry of the same rule at
  // the same key never changes priority. Count any that did.
  let renumbered = 0;
  for (const e of map.entries()) {
    const was = before.get(`${e.protocol}/${e.port.len}/${e.port.value}/${e.identity}`);
    if (was && was.rule === e.rule && was.priority !== e.priority) renumbered++;
  }
  let hits = 0;
  const probes = 1_000_000;
  t = performance.now();
  for (let i = 0; i < probes; i++) if (map.lookup(i % pods.length, 6, 8000 + (i % 2000))) hits++;
  const rate = probes / ((performance.now() - t) / 1000);
  reportFigure({
    name: `tiers: MapState insertion of one 25-rule ANP (${changes} changes, ${renumbered} renumbered)`,
    value: median(latencies),
    unit: 'ms',
    runs: latencies,
    target: '≤ 50 ms',
  });
  process.stdout.write(
    `MapState (${subject.id}, selected by ${selecting.length} Admin policies, ${rules.length} map rules over ${pods.length} identities): built in ${build.toFixed(0)} ms, ${entries.length} entries, ${map.classCount} identity classes; lookups ${(rate / 1e6).toFixed(2)} M/s (${hits} hits)\n` +
      `  inserting a 25-rule policy at priority 500 as one transaction (${added.length} ingress map rules): median ${median(latencies).toFixed(1)} ms of 5 (${latencies.map((l) => l.toFixed(0)).join(', ')}), CPU median ${median(cpuTimes).toFixed(1)} ms (${cpuTimes.map((l) => l.toFixed(0)).join(', ')}), main thread's CPU median ${median(mainTimes).toFixed(1)} ms (${mainTimes.map((l) => l.toFixed(0)).join(', ')}), ${changes} entry changes, ${renumbered} existing entries renumbered\n`,
  );
}

function mapRules(
  rule: ClusterRule,
  policy: string,
  priority: number,
  subject: Endpoint,
  pods: readonly Endpoint[],
  identityOf: ReadonlyMap<Endpoint, number>,
  labelsOf: (ns: string) => Record<string, string> | undefined,
): MapRule<string>[] {
  const identities = new Set<number>();
  for (const peer of rule.peers) {
    if (peer.type !== 'pods') continue;
    for (const pod of pods) {
      const labels = labelsOf(pod.namespace);
      if (!labels || !namespaceMatches(peer.namespaces, labels, labelsOf(subject.namespace) ?? {})) continue;
      if (peer.podSelector && !selectorMatches(peer.podSelector, pod.labels)) continue;
      identities.add(identityOf.get(pod) as number);
    }
  }
  const byProtocol = new Map<number, PortPrefix[]>();
  const add = (protocol: Protocol, from: number, to: number) =>
    byProtocol.set(PROTOCOL_NUMBER[protocol], [
      ...(byProtocol.get(PROTOCOL_NUMBER[protocol]) ?? []),
      ...portRangePrefixes(from, to),
    ]);
  if (!rule.ports) for (const p of ['TCP', 'UDP', 'SCTP'] as const) add(p, 0, 65535);
  for (const port of rule.ports ?? []) {
    if (port.type === 'number')
      add(port.protocol, port.port ?? 0, port.port === undefined ? 65535 : (port.endPort ?? port.port));
    else for (const p of subject.ports.filter((x) => x.name === port.name)) add(p.protocol, p.port, p.port);
  }
  return [...byProtocol].map(([protocol, ports]) => ({
    priority,
    protocol,
    ports,
    identities,
    verdict: ACTION[rule.action],
    label: `${policy} ingress[${rule.index}]/${protocol}`,
  }));
}
