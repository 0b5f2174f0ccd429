/**
 * The eBPF benchmark's traffic table (bench/ebpf.bench.ts runs the rounds): every configuration
 * against no policy round by round, and the programs' own cost from the statistics pass.
 */
import { median } from './stats.ts';
import { reportFigure } from './report.ts';
import { say } from './ebpf-common.ts';

/** What the traffic table shows of a configuration. */
export interface ReportedConfiguration {
  readonly label: string;
  readonly policies: number;
}

export interface TrafficRuns {
  /** Per configuration, per round. */
  readonly throughputs: number[][];
  readonly rates: number[][];
  /** CPU ns the client and server spent per connection (NaN with the agent client). */
  readonly cpus: number[][];
  /** The programs' ns per packet while iperf3 ran, and the packets per second they saw (statistics pass). */
  readonly iperfNs: number[][];
  readonly iperfPackets: number[][];
  /** ns per packet during the connections (each one's first packets judged, the rest tracked), and packets per connection. */
  readonly connectNs: number[][];
  readonly connectPackets: number[][];
  readonly connectEach: number[][];
}

const spread = (values: readonly number[], digits = 0): string =>
  values.length ? `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}` : '-';

/**
 * Each configuration against no policy, round by round (a round's configurations ran minutes
 * apart at most, under the same load): the median of those ratios and their spread, then the
 * programs' own cost, which load does not move the way it moves wall-clock rates.
 */
export function reportTraffic(
  configurations: readonly ReportedConfiguration[],
  t: TrafficRuns,
  runs: number,
  seconds: number,
  connections: number,
  client: string,
): void {
  const ratios = (series: number[][], c: number) =>
    (series[c] ?? [])
      .map((value, r) => (100 * value) / ((series[0] ?? [])[r] ?? NaN))
      .filter(Number.isFinite);
  // Connections per CPU-second against no policy: no policy's CPU per connection over this one's.
  const cpuRatios = (c: number) =>
    (t.cpus[c] ?? [])
      .map((value, r) => (100 * ((t.cpus[0] ?? [])[r] ?? NaN)) / value)
      .filter(Number.isFinite);
  say(
    `\ntraffic: ${runs} rounds, each configuration once per round (rotating order); iperf3 ${seconds} s; ${connections.toLocaleString('en')} connections (${client})`,
  );
  say(
    "% of none: median of the rounds' ratios to no policy (min–max); CPU: client + server µs per connection (a round's least chunk), and no policy's over this one's (connections per CPU-second)",
  );
  say(
    'ns/packet, packets: one pass with kernel.bpf_stats_enabled after the rounds (the rounds run without it)',
  );
  say(
    'configuration               policies   TCP Gbit/s        % of none       connections/s        % of none       CPU µs/conn          % of none       ns/packet iperf   ns/packet, packets per connection',
  );
  for (const [c, configuration] of configurations.entries()) {
    const tp = (t.throughputs[c] ?? []).map((x) => x / 1e9);
    const rr = t.rates[c] ?? [];
    const cpu = (t.cpus[c] ?? []).filter(Number.isFinite).map((x) => x / 1000);
    const ns = (t.iperfNs[c] ?? []).filter(Number.isFinite);
    const cn = (t.connectNs[c] ?? []).filter(Number.isFinite);
    const cp = t.connectPackets[c] ?? [];
    const tr = ratios(t.throughputs, c);
    const rt = ratios(t.rates, c);
    const cr = cpuRatios(c);
    const withSpread = (values: number[], digits = 0, unit = '') =>
      values.length ? `${median(values).toFixed(digits)}${unit} (${spread(values, digits)})` : '-';
    say(
      `${configuration.label.padEnd(26)} ${String(configuration.policies).padStart(8)}   ` +
        withSpread(tp, 2).padEnd(18) +
        ' ' +
        withSpread(tr, 0, '%').padEnd(16) +
        ' ' +
        withSpread(rr).padEnd(21) +
        withSpread(rt, 0, '%').padEnd(16) +
        withSpread(cpu, 1).padEnd(21) +
        withSpread(cr, 1, '%').padEnd(16) +
        ' ' +
        (ns.length ? median(ns).toFixed(0) : '-').padEnd(18) +
        (cn.length ? `${median(cn).toFixed(0)}, ${median(cp).toFixed(1)}` : '-') +
        ((t.connectEach[c] ?? []).length === 2
          ? `; ns per connection: from_pod ${(t.connectEach[c] ?? [])[0]?.toFixed(0)}, to_pod ${(t.connectEach[c] ?? [])[1]?.toFixed(0)}`
          : ''),
    );
    if (!configuration.label.startsWith('eBPF')) continue;
    if (tr.length)
      reportFigure({
        name: `${configuration.label} throughput, % of no policy (median of rounds)`,
        value: median(tr),
        unit: '%',
        target: '≥ 95 %',
        runs: tr,
      });
    reportFigure({
      name: `${configuration.label} new connections/s, % of no policy (median of rounds)`,
      value: median(rt),
      unit: '%',
      target: '≥ 95 %',
      runs: rt,
    });
    if (cr.length)
      reportFigure({
        name: `${configuration.label} new connections per CPU-second, % of no policy (median of rounds)`,
        value: median(cr),
        unit: '%',
        target: '≥ 95 %',
        runs: cr,
      });
    if (ns.length)
      reportFigure({
        name: `${configuration.label} ns per packet in BPF under iperf3`,
        value: median(ns),
        unit: 'ns',
        runs: ns,
      });
  }
}
