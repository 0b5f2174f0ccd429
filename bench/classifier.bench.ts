/**
 * `npm run bench -- classifier [--lookups N]`: packet lookups per second on one core through
 * the classifier for a 10,000-pod cluster (shape a at 10%), the same queries through the
 * reference evaluator side by side, the lookup cost as the number of policies selecting one
 * endpoint grows (1, 10, 64, 100, 1,000), and the maps' memory per endpoint and per policy.
 */
import { Classifier, PROTOCOL_INDEX, type ClassifierPacket } from '../src/classifier/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { seededRandom } from '../src/generate/random.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import type { Cluster, Protocol } from '../src/model/types.ts';
import { evaluate, indexCluster } from '../src/semantics/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

function classifierOf(cluster: Cluster): Classifier {
  const state = new ClusterState();
  state.resync(cluster);
  return new Classifier(state);
}

/**
 * A deterministic list of packets between pods of the cluster: half between random pods (mostly
 * denied: few policies reach across namespaces), half within one namespace (shape a's four pods
 * per namespace, listed together), where its policies allow some of them.
 */
function packets(cluster: Cluster, count: number): V4Packet[] {
  const pods = cluster.endpoints.filter((e) => e.ips.length > 0 && !e.hostNetwork);
  const ports: [number, Protocol][] = [
    [8080, 'TCP'],
    [8443, 'TCP'],
    [53, 'UDP'],
    [443, 'TCP'],
  ];
  const out: V4Packet[] = [];
  // mulberry32: an LCG's low bits repeat with short periods, which correlated sources with
  // destinations and kept lookups in cache (figures before 2026-11-22 were flattered by it).
  const random = seededRandom(7);
  const next = (n: number): number => Math.floor(random() * n);
  for (let i = 0; i < count; i++) {
    const [port, protocol] = ports[next(ports.length)] as [number, Protocol];
    const from = next(pods.length);
    const to = i % 2 === 0 ? next(pods.length) : Math.min(pods.length - 1, from - (from % 4) + next(4));
    const src = pods[from]?.ips[0] as ClassifierPacket['src'];
    const dst = pods[to]?.ips[0] as ClassifierPacket['dst'];
    out.push({ src, dst, protocol, port, srcV4: Number(src.value), dstV4: Number(dst.value) });
  }
  return out;
}

type V4Packet = ClassifierPacket & { readonly srcV4: number; readonly dstV4: number };

/**
 * Packets from outside the cluster (192.168.a.b) to random pods on TCP/8080: shape a's app-1
 * pods admit 192.168.0.0/16 except one /24 per namespace, so most of these are allowed and go
 * through the supplementary and except maps; app-0 pods deny them.
 */
function outsidePackets(cluster: Cluster, count: number): V4Packet[] {
  const pods = cluster.endpoints.filter((e) => e.ips.length > 0 && !e.hostNetwork);
  const out: V4Packet[] = [];
  const random = seededRandom(11);
  const next = (n: number): number => Math.floor(random() * n);
  for (let i = 0; i < count; i++) {
    const srcV4 = ((192 << 24) | (168 << 16) | (next(256) << 8) | (1 + next(254))) >>> 0;
    const dst = pods[next(pods.length)]?.ips[0] as ClassifierPacket['dst'];
    const src = { family: 4, value: BigInt(srcV4) } as ClassifierPacket['src'];
    out.push({ src, dst, protocol: 'TCP', port: 8080, srcV4, dstV4: Number(dst.value) });
  }
  return out;
}

/**
 * Lookups per second over the packets, median of `runs` passes. The packets are read from
 * columns (typed arrays), as a datapath has them in a buffer: walking a million packet objects
 * costs about as much as the lookups themselves and is not what is measured.
 */
function lookupsPerSecond(
  classifier: Classifier,
  list: readonly V4Packet[],
  runs = 5,
): { rate: number; allowed: number; rates: number[]; cpuRate: number } {
  const src = Uint32Array.from(list, (p) => p.srcV4);
  const dst = Uint32Array.from(list, (p) => p.dstV4);
  const protocol = Uint8Array.from(list, (p) => PROTOCOL_INDEX[p.protocol]);
  const port = Uint16Array.from(list, (p) => p.port);
  const rates: number[] = [];
  // CPU time too: on the shared machine wall time measures the neighbours as much as the lookups.
  const cpuRates: number[] = [];
  let allowed = 0;
  for (let r = 0; r < runs; r++) {
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < src.length; i++)
      if (
        classifier.allowsV4Indexed(
          src[i] as number,
          dst[i] as number,
          protocol[i] as number,
          port[i] as number,
        )
      )
        allowed++;
    rates.push(list.length / ((performance.now() - t) / 1000));
    const used = process.cpuUsage(cpu);
    cpuRates.push(list.length / ((used.user + used.system) / 1e6));
  }
  return { rate: median(rates), allowed: allowed / runs, rates, cpuRate: median(cpuRates) };
}

export function classifierBenchmark(args: string[]): void {
  const lookups = option(args, 'lookups', 1_000_000);
  const generated = generateShape('a', { scale: 0.1, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  const started = performance.now();
  const classifier = classifierOf(cluster);
  const build = performance.now() - started;
  const list = packets(cluster, lookups);
  const { rate, allowed, rates, cpuRate } = lookupsPerSecond(classifier, list);
  reportFigure({
    id: 'classifier.random-pairs',
    name: 'classifier shape a ×0.1: lookups, random pod pairs',
    value: rate / 1e6,
    unit: 'M/s',
    runs: rates.map((r) => r / 1e6),
    target: '≥ 10 M/s',
  });
  reportFigure({
    id: 'classifier.random-pairs-cpu',
    name: 'classifier shape a ×0.1: lookups per CPU-second, random pod pairs',
    value: cpuRate / 1e6,
    unit: 'M/s',
    target: '≥ 10 M/s',
  });
  reportFigure({ id: 'classifier.build', name: 'classifier shape a ×0.1: build', value: build, unit: 'ms' });
  // The reference evaluator on the same packets (a sample: it is much slower).
  const index = indexCluster(cluster);
  const byIp = new Map(
    cluster.endpoints.flatMap((e) => e.ips.map((ip) => [`${ip.family}:${ip.value}`, e] as const)),
  );
  const sample = list.slice(0, 20_000);
  const t = performance.now();
  for (const p of sample) {
    const src = byIp.get(`${p.src.family}:${p.src.value}`);
    const dst = byIp.get(`${p.dst.family}:${p.dst.value}`);
    if (!src || !dst) continue;
    evaluate(index, {
      src: { kind: 'endpoint', endpoint: src },
      dst: { kind: 'endpoint', endpoint: dst },
      protocol: p.protocol,
      port: p.port,
    });
  }
  const reference = sample.length / ((performance.now() - t) / 1000);
  process.stdout.write(
    `shape a ×0.1: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies; classifier built in ${build.toFixed(0)} ms (${classifier.tables} distinct direction tables)\n` +
      `lookups (IPv4, numeric path): ${(rate / 1e6).toFixed(2)} M/s classifier (${(cpuRate / 1e6).toFixed(2)} M per CPU-s) vs ${(reference / 1e3).toFixed(1)} k/s reference evaluator (×${(rate / reference).toFixed(0)}), one core, median of 5 passes over ${lookups} packets (${allowed} allowed)\n`,
  );
  const outside = outsidePackets(cluster, lookups);
  const fromOutside = lookupsPerSecond(classifier, outside);
  reportFigure({
    id: 'classifier.outside',
    name: 'classifier shape a ×0.1: lookups from outside addresses',
    value: fromOutside.rate / 1e6,
    unit: 'M/s',
    runs: fromOutside.rates.map((r) => r / 1e6),
  });
  process.stdout.write(
    `from outside addresses (192.168.0.0/16) to random pods, TCP/8080: ${(fromOutside.rate / 1e6).toFixed(2)} M/s (${(fromOutside.cpuRate / 1e6).toFixed(2)} M per CPU-s; ${fromOutside.allowed} of ${lookups} allowed: ipBlock with except, through the supplementary and except maps)\n`,
  );
  const memory = classifier.memory;
  process.stdout.write(
    `lookup structures: ${(memory.records / 2 ** 20).toFixed(1)} MiB address records, ${(memory.tables / 2 ** 20).toFixed(1)} MiB packed tables (${((memory.records + memory.tables) / cluster.endpoints.length).toFixed(0)} bytes per endpoint, ${((memory.records + memory.tables) / cluster.policies.length).toFixed(0)} per policy)\n`,
  );
  process.stdout.write(
    'policies selecting one endpoint → lookups/s (the packet hits that endpoint), map bytes\n',
  );
  for (const n of [1, 10, 64, 100, 1000]) {
    const objects: object[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } }];
    objects.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db', namespace: 'a', labels: { app: 'db' } },
      spec: { containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: '10.0.0.1' },
    });
    for (let i = 0; i < n; i++) {
      objects.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `c${i}`, namespace: 'a', labels: { app: `c${i}` } },
        spec: { containers: [{ name: 'c' }] },
        status: { phase: 'Running', podIP: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}` },
      });
      objects.push({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: `p${i}`, namespace: 'a' },
        spec: {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [
            { from: [{ podSelector: { matchLabels: { app: `c${i}` } } }], ports: [{ port: 1000 + i }] },
          ],
        },
      });
    }
    const small = loadFromObjects(objects).cluster;
    const c = classifierOf(small);
    const db = small.endpoints.find((e) => e.id === 'a/db');
    const clients = small.endpoints.filter((e) => e.id !== 'a/db');
    const clientById = new Map(clients.map((e) => [e.id, e]));
    const hits: V4Packet[] = [];
    for (let i = 0; i < 200_000; i++) {
      // Client c{k} is allowed on port 1000 + k (endpoints are listed by id, not by k).
      const client = clientById.get(`a/c${i % n}`);
      const src = client?.ips[0] as ClassifierPacket['src'];
      const dst = db?.ips[0] as ClassifierPacket['dst'];
      hits.push({
        src,
        dst,
        protocol: 'TCP',
        port: 1000 + (i % n),
        srcV4: Number(src.value),
        dstV4: Number(dst.value),
      });
    }
    const table = db ? c.mapsOf(db.ips[0] as ClassifierPacket['src'])?.ingress : undefined;
    const { rate: perEndpoint, cpuRate: perEndpointCpu } = lookupsPerSecond(c, hits);
    reportFigure({
      id: `classifier.endpoint-${n}`,
      name: `classifier: one endpoint selected by ${n} policies`,
      value: perEndpoint / 1e6,
      unit: 'M/s',
      target: 'flat',
    });
    process.stdout.write(
      `  ${String(n).padStart(5)} policies: ${(perEndpoint / 1e6).toFixed(2)} M/s (${(perEndpointCpu / 1e6).toFixed(2)} per CPU-s); ${table?.width ?? 0} bitmap words; ${table?.bytes ?? 0} bytes of bitmaps (${((table?.bytes ?? 0) / n).toFixed(0)} per policy)\n`,
    );
  }
}
