/**
 * The eBPF benchmark's per-packet part (`npm run bench -- ebpf`, item 2 of bench/ebpf.bench.ts):
 * BPF_PROG_TEST_RUN on packets of new and tracked connections by policies selecting one endpoint,
 * and a same-node connection's packets through both hooks.
 */
import type { Cluster } from '../src/model/types.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { parseIp, type IpAddress } from '../src/net/ip.ts';
import {
  frameOf,
  layout,
  loadProgram,
  PinnedMaps,
  PinnedProgram,
  pinToCurrentCpu,
  unload,
  type PinLocation,
} from '../src/datapaths/ebpf/kernel/index.ts';
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { fillConnectionTable, renderInto, say, setConfigFlag, setJudgeEvery } from './ebpf-common.ts';

const ip = (text: string): IpAddress => {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};

/** Client pods in every per-packet configuration: the packets' addresses stay the same whatever the policies. */
export const CLIENTS = 1000;
export const clientIp = (i: number): string => `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;

/**
 * A db selected by `n` policies, policy k letting clients labelled c{k} in on port 1000 + k
 * (the classifier benchmark's cluster). There are always CLIENTS client pods, client i labelled
 * c{i mod n}: only the policies vary between configurations, not the addresses packets come from.
 */
function selectedBy(n: number, layout: 'own' | 'shared' | 'one-rule' = 'own'): Cluster {
  return loadFromObjects(selectedByObjects(n, layout)).cluster;
}

/** selectedBy's cluster as manifests (the flows benchmark hands them to its reader process). */
export function selectedByObjects(n: number, layout: 'own' | 'shared' | 'one-rule' = 'own'): object[] {
  const objects: object[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db', namespace: 'a', labels: { app: 'db' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: '10.0.0.1' },
    },
  ];
  for (let i = 0; i < CLIENTS; i++)
    objects.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `c${i}`,
        namespace: 'a',
        labels: { app: `c${layout === 'shared' ? Math.floor(n / 2) : i % n}` },
      },
      spec: { nodeName: 'n2', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: clientIp(i) },
    });
  if (layout === 'one-rule') {
    objects.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'a' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          {
            from: Array.from({ length: n }, (_, k) => ({ podSelector: { matchLabels: { app: `c${k}` } } })),
            ports: Array.from({ length: n }, (_, k) => ({ port: 1000 + k })),
          },
        ],
      },
    });
    return objects;
  }
  for (let k = 0; k < n; k++)
    objects.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `p${k}`, namespace: 'a' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: `c${k}` } } }], ports: [{ port: 1000 + k }] },
        ],
      },
    });
  return objects;
}

/**
 * Per-packet cost by policies on one endpoint. New connections spread two ways: over the n
 * clients the n policies name (what earlier runs measured — the addresses, records and entries a
 * packet touches grow with n too), and over all 1,000 clients in every configuration (the same
 * addresses whatever n: only the policies vary). Only the second isolates the policy count; the
 * two configurations after it split that: the program's work (a wide table, shared entries) and
 * the data a stream of packets touches (n different entries, a one-word table).
 */
export function perPacket(): void {
  say(
    '\nper packet in the kernel (BPF_PROG_TEST_RUN, to_pod of the selected endpoint — the tracked reply: its from_pod —, ns as the kernel measures: the median packet, median of 5 rounds of 4,000)',
  );
  say(
    "policies   new conn., n clients   1,000 clients (allowed)   (denied)   same client   tracked   its reply   judged: 1,000 clients, one policy's entries   one rule, n entries   n clients   1,000 clients   same client   n clients, 1 policy",
  );
  const location: PinLocation = { instance: `bench-pp-${process.pid}` };
  loadProgram(location);
  const program = PinnedProgram.open(location, 'to_pod');
  const replies = PinnedProgram.open(location, 'from_pod');
  const db = ip('10.0.0.1');
  const clients = Array.from({ length: CLIENTS }, (_, i) => ip(clientIp(i)));
  const install = (cluster: Cluster): void => renderInto(location, 'n1', cluster);
  const judgeEvery = (on: boolean): void => setJudgeEvery(location, on);
  // Each measurement starts from an empty connection table and uses new 5-tuples only, so
  // every packet is judged by the tables and inserted without evicting anything.
  const cost = (packet: (k: number) => { client: number; port: number }): number => {
    const tracking = PinnedMaps.open(location);
    for (const [key] of tracking.entries('conntrack')) tracking.remove('conntrack', key);
    tracking.close();
    // The median packet, not the mean: a test run is timed in wall-clock, and on a shared machine
    // a run the scheduler preempts counts milliseconds — a few of those in 4,000 packets moved
    // the mean by hundreds of nanoseconds.
    const samples: number[] = [];
    for (let round = 0; round < 5; round++) {
      const packets = 4000;
      const durations: number[] = [];
      for (let k = 0; k < packets; k++) {
        const { client, port } = packet(k);
        const srcPort = 1024 + round * packets + k;
        durations.push(
          program.run(
            frameOf({ src: clients[client] as IpAddress, dst: db, protocol: 'TCP', srcPort, dstPort: port }),
          ).duration,
        );
      }
      samples.push(median(durations));
    }
    return median(samples);
  };
  try {
    for (const n of [1, 10, 100, 1000]) {
      install(selectedBy(n));
      // Client i is labelled for policy i mod n, which lets it in on 1000 + i mod n.
      const allowed = (client: number) => ({ client, port: 1000 + (client % n) });
      const named = cost((k) => allowed(k % n));
      const spread = cost((k) => allowed(k % CLIENTS));
      reportFigure({
        name: `eBPF new connection, ${n} policies on the endpoint, 1,000 clients in turn`,
        value: spread,
        unit: 'ns',
      });
      const denied = cost((k) => {
        const client = k % CLIENTS;
        return { client, port: 1000 + (((client % n) + 1) % n) + (n === 1 ? 1 : 0) };
      });
      const same = cost(() => allowed(Math.floor(n / 2)));
      const tracked = program.run(
        frameOf({ src: clients[0] as IpAddress, dst: db, protocol: 'TCP', srcPort: 1, dstPort: 1000 }),
        100_000,
      ).duration;
      const trackedReply = replies.run(
        frameOf({ src: db, dst: clients[0] as IpAddress, protocol: 'TCP', srcPort: 1000, dstPort: 1 }),
        100_000,
      ).duration;
      // The same streams with every packet judged by the tables: what a judgement costs, which
      // the verdict cache spares a connection between pods and a port judged already this epoch;
      // the two splitting configurations are about judging too.
      judgeEvery(true);
      const namedJudged = cost((k) => allowed(k % n));
      const spreadJudged = cost((k) => allowed(k % CLIENTS));
      // The policies alone (one client, its entries read by every packet), and the clients alone
      // (n different clients under one policy): "n clients" grows both at once.
      const sameJudged = cost(() => allowed(Math.floor(n / 2)));
      install(selectedBy(1));
      judgeEvery(true);
      const clientsJudged = cost((k) => ({ client: k % n, port: 1000 }));
      install(selectedBy(n, 'shared'));
      judgeEvery(true);
      const shared = cost((k) => ({ client: k % CLIENTS, port: 1000 + Math.floor(n / 2) }));
      install(selectedBy(n, 'one-rule'));
      judgeEvery(true);
      const oneRule = cost((k) => allowed(k % CLIENTS));
      judgeEvery(false);
      say(
        `${String(n).padStart(8)}   ${named.toFixed(0).padStart(20)}   ${spread.toFixed(0).padStart(23)}   ${denied.toFixed(0).padStart(8)}   ${same.toFixed(0).padStart(11)}   ${String(tracked).padStart(7)}   ${String(trackedReply).padStart(9)}   ${shared.toFixed(0).padStart(42)}   ${oneRule.toFixed(0).padStart(19)}   ${namedJudged.toFixed(0).padStart(9)}   ${spreadJudged.toFixed(0).padStart(13)}   ${sameJudged.toFixed(0).padStart(11)}   ${clientsJudged.toFixed(0).padStart(19)}`,
      );
    }
    sameNodeConnections();
  } finally {
    program.close();
    replies.close();
    unload(location);
  }
}

/**
 * A connection between two pods of the node through both hooks, as the kernel runs it: each of
 * its 10 packets (handshake, a request and its answer, the close) through the sender's from_pod
 * and then the receiver's to_pod on the same CPU (this thread pinned to one), each packet with
 * its own sequence number. The programs' run time per connection with the hand-over from
 * from_pod to to_pod and without it (CFG_NO_HANDOFF), alternating by round.
 */
function sameNodeConnections(): void {
  const web = ip('10.0.0.2');
  const db = ip('10.0.0.1');
  const cluster = loadFromObjects([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
    ...[
      ['db', '10.0.0.1'],
      ['web', '10.0.0.2'],
    ].map(([name, address]) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'a', labels: { app: name } },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: address },
    })),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'db', namespace: 'a' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 80 }] }],
      },
    },
  ]).cluster;
  // Loaded afresh for every round: the same object runs 5-10 % faster or slower from one load to
  // the next (where the JIT places it), which one load would keep for every round.
  const location: PinLocation = { instance: `bench-sn-${process.pid}` };
  const pin = pinToCurrentCpu();
  // With the hand-over and an empty table, without it, and with it in a full table (every
  // insert evicts: a long-lived node's steady state); each round starts from its table's state.
  const modes = ['on', 'off', 'full'] as const;
  type Mode = (typeof modes)[number];
  const sums: Record<Mode, number[]> = { on: [], off: [], full: [] };
  const parts: Record<Mode, { from: number[]; to: number[] }> = {
    on: { from: [], to: [] },
    off: { from: [], to: [] },
    full: { from: [], to: [] },
  };
  let port = 1024;
  try {
    for (let round = 0; round < 15; round++) {
      const mode = modes[round % modes.length] as Mode;
      unload(location);
      loadProgram(location);
      renderInto(location, 'n1', cluster);
      setConfigFlag(location, layout.CFG_NO_HANDOFF, mode === 'off');
      if (mode === 'full') fillConnectionTable(location);
      const from = PinnedProgram.open(location, 'from_pod');
      const to = PinnedProgram.open(location, 'to_pod');
      const totals: number[] = [];
      const froms: number[] = [];
      const tos: number[] = [];
      for (let c = 0; c < 1000; c++) {
        const sport = port++;
        let fromTime = 0;
        let toTime = 0;
        for (let k = 0; k < 10; k++) {
          // web sends packets 0, 2, 3, 5, 7; db the others (its answers).
          const fromWeb = k === 0 || k === 2 || k === 3 || k === 5 || k === 7;
          const frame = frameOf(
            fromWeb
              ? { src: web, dst: db, protocol: 'TCP', srcPort: sport, dstPort: 80 }
              : { src: db, dst: web, protocol: 'TCP', srcPort: 80, dstPort: sport },
          );
          frame.writeUInt32BE(k + 1, 14 + 20 + 4); // its sequence number
          fromTime += from.run(frame).duration;
          toTime += to.run(frame).duration;
        }
        froms.push(fromTime);
        tos.push(toTime);
        totals.push(fromTime + toTime);
      }
      from.close();
      to.close();
      sums[mode].push(median(totals));
      parts[mode].from.push(median(froms));
      parts[mode].to.push(median(tos));
    }
  } finally {
    pin.restore();
    unload(location);
  }
  const show = (mode: Mode) =>
    `${median(sums[mode]).toFixed(0)} ns (from_pod ${median(parts[mode].from).toFixed(0)}, to_pod ${median(parts[mode].to).toFixed(0)}; rounds ${sums[mode].map((v) => v.toFixed(0)).join(' / ')})`;
  say(
    `\na connection between two pods of the node, 10 packets through both hooks on one CPU (test runs, median connection of 1,000 per round, 5 rounds each, alternating, the program loaded afresh for each): programs' time per connection with the hand-over ${show('on')}; without ${show('off')}; with the hand-over, the table full ${show('full')}`,
  );
}
