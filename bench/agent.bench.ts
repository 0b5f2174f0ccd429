/**
 * `npm run bench -- agent [--scale 0.1] [--agents 10] [--samples 100] [--changes 20000] [--datapath nftables|ebpf|classifier]
 * [--cold-scales 0.1,1] [--fanout 100] [--fanout-samples N] [--runs 3] [--shm] [--only propagation,sustained,cold,fanout]
 * [--cpu-prof DIR] [--change label|policy]`:
 * node agents (bench/agent-child.ts, one process per agent, or ten per process for the fan-out)
 * over a real etcd loaded with generated shape (a) as the reflector writes it.
 *  1. propagation: one pod label change (`--change policy`: one policy's ports) written to etcd →
 *     realized by every agent (nftables in a
 *     network namespace each when root, else the classifier): median and p99 per run;
 *  2. sustained: `--changes` label changes written as fast as etcd takes them, until every
 *     agent has realized the last: changes/s;
 *  3. cold start: one nftables agent started against shape (a) at each `--cold-scales`: from
 *     the fork to its first snapshot committed, and its peak RSS;
 *  4. fan-out: `--fanout` classifier agents, ten per process: propagation, and etcd's CPU.
 * Every figure is printed with the one-minute load average (the machine is shared).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { pinDir } from '../src/datapaths/ebpf/kernel/index.ts';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { isRoot, run } from '../src/dataplane/index.ts';
import { connectEtcd, startEtcd, type EtcdServer, type EtcdStore, type TxnOp } from '../src/etcd/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { encodeObject, KeyLayout } from '../src/reflected/index.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

const HERE = new URL('.', import.meta.url).pathname;
const clock = (): number => performance.timeOrigin + performance.now();
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const say = (line: string): boolean => process.stdout.write(`${line}\n`);

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
}

type Raw = Record<string, unknown> & { metadata: { name: string; namespace?: string; labels?: object } };

/** A shape (a) cluster written under `prefix` as the reflector writes it. */
async function loadShape(
  store: EtcdStore,
  prefix: string,
  scale: number,
): Promise<{ layout: KeyLayout; pods: Raw[]; policies: Raw[] }> {
  const layout = new KeyLayout(prefix);
  const shape = generateShape('a', { scale, seed: 1 });
  const objects = [...shape.namespaces, ...shape.policies, ...shape.pods] as Raw[];
  let ops: TxnOp[] = [];
  for (const object of objects) {
    const encoded = encodeObject(layout, object, 'bench');
    if (encoded.value) ops.push({ type: 'put', key: encoded.key, value: encoded.value });
    if (ops.length === 1000) {
      await store.txn([], ops);
      ops = [];
    }
  }
  ops.push({ type: 'put', key: `${layout.resourceVersions}pod`, value: '1' });
  await store.txn([], ops);
  return { layout, pods: shape.pods as Raw[], policies: shape.policies as Raw[] };
}

/** Agent processes and the revisions each agent realized, with when. */
class Fleet {
  readonly children: ChildProcess[] = [];
  /** Per agent: the latest revision realized, and per revision awaited, when. */
  readonly realized = new Map<string, number>();
  readonly ready = new Map<string, { at: number; maxRssMb: number; cpuSeconds: number }>();
  private waiters: { revision: number; resolve: (at: number) => void }[] = [];
  private lastAt = 0;

  /** `cpuProfileDir`: each agent process writes a V8 CPU profile there (`--cpu-prof`). */
  constructor(
    readonly agents: number,
    private readonly cpuProfileDir?: string,
  ) {}

  spawn(config: object, label: string): ChildProcess {
    const profile = this.cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', this.cpuProfileDir] : [];
    const child = fork(join(HERE, 'agent-child.js'), [JSON.stringify(config)], {
      execArgv: ['--max-old-space-size=4096', ...profile],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.on(
      'message',
      (m: {
        type: string;
        node: string;
        revision: number;
        at: number;
        maxRssMb?: number;
        cpuSeconds?: number;
      }) => {
        if (m.type === 'ready')
          this.ready.set(m.node, { at: m.at, maxRssMb: m.maxRssMb ?? 0, cpuSeconds: m.cpuSeconds ?? 0 });
        this.realized.set(m.node, Math.max(this.realized.get(m.node) ?? 0, m.revision));
        this.lastAt = Math.max(this.lastAt, m.at);
        this.settle();
      },
    );
    child.on('exit', (code) => {
      if (code !== 0 && code !== null) process.stderr.write(`agent process ${label} exited ${code}\n`);
    });
    this.children.push(child);
    return child;
  }

  /** Resolves with the time the last agent realized `revision`. */
  allRealized(revision: number, timeoutMs = 120_000): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`revision ${revision} not realized by every agent within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.push({
        revision,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      });
      this.settle();
    });
  }

  private settle(): void {
    if (this.realized.size < this.agents) return;
    const least = Math.min(...this.realized.values());
    const due = this.waiters.filter((w) => w.revision <= least);
    if (due.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.revision > least);
    for (const w of due) w.resolve(this.lastAt);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.send({ type: 'stop' });
          }),
      ),
    );
  }
}

/** Relabels a pod with another pod's labels (policies select it differently), as the reflector writes it. */
function relabel(layout: KeyLayout, pods: readonly Raw[], i: number): TxnOp[] {
  const pod = pods[(i * 7919) % pods.length]!;
  const donor = pods[(i * 104_729 + 13) % pods.length]!;
  const changed = {
    ...pod,
    metadata: { ...pod.metadata, labels: { ...donor.metadata.labels, rev: String(i) } },
  };
  const encoded = encodeObject(layout, changed, 'bench');
  return [{ type: 'put', key: encoded.key, value: encoded.value! }];
}

/**
 * Changes one policy's first rule's ports (a new port each time): the tables of every pod it
 * selects change, and nothing else — "policy change → maps".
 */
function repolicy(layout: KeyLayout, policies: readonly Raw[], i: number): TxnOp[] {
  const policy = policies[(i * 7919) % policies.length]!;
  const spec = policy.spec as { ingress?: Record<string, unknown>[]; egress?: Record<string, unknown>[] };
  const ports = [{ protocol: 'TCP', port: 1024 + (i % 60_000) }];
  const direction = spec.ingress && spec.ingress.length > 0 ? 'ingress' : 'egress';
  const rules = spec[direction] ?? [{}];
  const changed = { ...policy, spec: { ...spec, [direction]: [{ ...rules[0], ports }, ...rules.slice(1)] } };
  const encoded = encodeObject(layout, changed, 'bench');
  return [{ type: 'put', key: encoded.key, value: encoded.value! }];
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
}

async function withNamespaces<T>(names: readonly string[], body: () => Promise<T>): Promise<T> {
  try {
    for (const name of names) await run('ip', ['netns', 'add', name]);
    return await body();
  } finally {
    for (const name of names) {
      await run('ip', ['netns', 'delete', name]);
      // An eBPF agent leaves its program and maps pinned (enforcing) when it stops.
      rmSync(pinDir({ instance: `netns-${name}` }), { recursive: true, force: true });
    }
  }
}

/** Single changes, one at a time: latency until every agent realized each. */
async function propagation(
  store: EtcdStore,
  layout: KeyLayout,
  change: (i: number) => TxnOp[],
  fleet: Fleet,
  samples: number,
  offset: number,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = clock();
    const { revision } = await store.txn([], change(offset + i));
    latencies.push((await fleet.allRealized(revision)) - started);
  }
  return latencies.sort((a, b) => a - b);
}

export async function agentBenchmark(args: string[]): Promise<void> {
  const scale = Number(option(args, 'scale', '0.1'));
  const agents = Number(option(args, 'agents', '10'));
  const samples = Number(option(args, 'samples', '100'));
  const changes = Number(option(args, 'changes', '20000'));
  const runs = Number(option(args, 'runs', '3'));
  const fanout = Number(option(args, 'fanout', '100'));
  const coldScales = option(args, 'cold-scales', '0.1,1').split(',').map(Number);
  const only = new Set(option(args, 'only', 'propagation,sustained,cold,fanout').split(','));
  // --change label|policy: what propagation writes (a pod relabelled, or a policy's ports changed).
  const changeKind = option(args, 'change', 'label');
  if (changeKind !== 'label' && changeKind !== 'policy') throw new Error('--change must be label or policy');
  // --datapath nftables|ebpf|classifier (default nftables as root, else the classifier).
  const asked = option(args, 'datapath', isRoot() ? 'nftables' : 'classifier');
  const datapath = isRoot() || asked === 'classifier' ? asked : 'classifier';
  if (!isRoot()) say('not root: the propagation agents use the classifier datapath (no kernel)');
  const kernel = datapath === 'nftables' || datapath === 'ebpf';
  const fanoutSamples = Number(option(args, 'fanout-samples', String(samples)));
  // --cpu-prof DIR: every agent process of the sustained and cold-start parts writes a V8 profile.
  const cpuProfileDir = args.includes('--cpu-prof') ? option(args, 'cpu-prof', '') : undefined;
  // --shm: etcd's data in memory (/dev/shm), so its fsyncs do not measure the shared disk.
  const shm = args.includes('--shm') ? mkdtempSync(`/dev/shm/palisade-etcd-${process.pid}-`) : undefined;
  const etcd: EtcdServer = await startEtcd({ maxTxnOps: 10_000, ...(shm ? { dataDir: shm } : {}) });
  const store = await connectEtcd({ endpoints: [etcd.endpoint] });
  try {
    say(`etcd ${etcd.endpoint} (pid ${etcd.pid}), data in ${etcd.dataDir}; load ${load()}`);
    const small = await loadShape(store, '/bench-small', scale);
    say(`shape (a) ×${scale}: ${small.pods.length.toLocaleString('en-US')} pods written; load ${load()}`);

    if (only.has('propagation') || only.has('sustained')) {
      const netns = Array.from({ length: agents }, (_, i) => `pal-bench-${process.pid}-${i}`);
      await withNamespaces(kernel ? netns : [], async () => {
        const fleet = new Fleet(agents, cpuProfileDir);
        for (let i = 0; i < agents; i++)
          fleet.spawn(
            {
              endpoint: etcd.endpoint,
              prefix: '/bench-small',
              datapath,
              nodes: [{ node: `node-${i}`, ...(kernel ? { netns: netns[i] } : {}) }],
            },
            `node-${i}`,
          );
        try {
          const { revision } = await store.txn([], relabel(small.layout, small.pods, 0));
          await fleet.allRealized(revision, 300_000);
          say(`${agents} ${datapath} agents ready (one process each); load ${load()}`);
          if (only.has('propagation')) {
            const medians: number[] = [];
            const p99s: number[] = [];
            for (let r = 0; r < runs; r++) {
              const sorted = await propagation(
                store,
                small.layout,
                changeKind === 'policy'
                  ? (i) => repolicy(small.layout, small.policies, i)
                  : (i) => relabel(small.layout, small.pods, i),
                fleet,
                samples,
                1 + r * samples,
              );
              medians.push(median(sorted));
              p99s.push(percentile(sorted, 0.99));
              say(
                `propagation run ${r + 1}: ${changeKind} change written → realized by all ${agents} agents: median ${median(sorted).toFixed(1)} ms, ` +
                  `p90 ${percentile(sorted, 0.9).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms over ${samples} changes; load ${load()}`,
              );
            }
            say(
              `propagation, ${agents} agents, shape (a) ×${scale}: median of run medians ${median(medians).toFixed(1)} ms (target ≤ 50), median of run p99s ${median(p99s).toFixed(1)} ms (target ≤ 200)`,
            );
            reportFigure({
              name: `agent propagation ${agents} agents ×${scale} (median)`,
              value: median(medians),
              unit: 'ms',
              target: '≤ 50 ms',
              runs: medians,
            });
            reportFigure({
              name: `agent propagation ${agents} agents ×${scale} (p99)`,
              value: median(p99s),
              unit: 'ms',
              target: '≤ 200 ms',
              runs: p99s,
            });
          }
          if (only.has('sustained')) {
            const rates: number[] = [];
            for (let r = 0; r < runs; r++) {
              const batch = 100;
              const started = clock();
              let last = 0;
              let written = 0;
              const inflight: Promise<unknown>[] = [];
              for (let i = 0; i < changes; i += batch) {
                const ops = Array.from({ length: Math.min(batch, changes - i) }, (_, k) =>
                  relabel(small.layout, small.pods, 100_000 * (r + 1) + i + k),
                ).flat();
                inflight.push(
                  store.txn([], ops).then((t) => {
                    last = Math.max(last, t.revision);
                    written += ops.length;
                  }),
                );
                if (inflight.length >= 4) await inflight.shift();
              }
              await Promise.all(inflight);
              const wroteAt = clock();
              const doneAt = await fleet.allRealized(last, 300_000);
              const seconds = (doneAt - started) / 1000;
              rates.push(written / seconds);
              say(
                `sustained run ${r + 1}: ${written.toLocaleString('en-US')} label changes in txns of ${batch}: written in ${((wroteAt - started) / 1000).toFixed(2)} s, ` +
                  `all ${agents} agents realized the last ${Math.max(0, doneAt - wroteAt).toFixed(0)} ms after it = ${Math.round(written / seconds).toLocaleString('en-US')} changes/s; load ${load()}`,
              );
            }
            say(
              `sustained through etcd with ${agents} agents keeping up: median ${Math.round(median(rates)).toLocaleString('en-US')} changes/s (target ≥ 2,000)`,
            );
            reportFigure({
              name: `agent sustained ${agents} agents ×${scale}`,
              value: median(rates),
              unit: 'changes/s',
              target: '≥ 2,000',
              runs: rates,
            });
          }
        } finally {
          await fleet.stop();
        }
      });
    }

    if (only.has('cold')) {
      for (const coldScale of coldScales) {
        const prefix = `/bench-cold-${String(coldScale).replace('.', '_')}`;
        const started = clock();
        const cluster =
          coldScale === scale
            ? { ...small, layout: new KeyLayout('/bench-small') }
            : await loadShape(store, prefix, coldScale);
        const where = coldScale === scale ? '/bench-small' : prefix;
        say(
          `shape (a) ×${coldScale} in etcd (${cluster.pods.length.toLocaleString('en-US')} pods, written in ${((clock() - started) / 1000).toFixed(1)} s); load ${load()}`,
        );
        const seconds: number[] = [];
        const rss: number[] = [];
        for (let r = 0; r < runs; r++) {
          const ns = `pal-cold-${process.pid}-${r}`;
          await withNamespaces(datapath === 'nftables' ? [ns] : [], async () => {
            const fleet = new Fleet(1, cpuProfileDir);
            const forked = clock();
            fleet.spawn(
              {
                endpoint: etcd.endpoint,
                prefix: where,
                datapath,
                nodes: [{ node: 'node-0', ...(datapath === 'nftables' ? { netns: ns } : {}) }],
              },
              'cold',
            );
            try {
              await fleet.allRealized(1, 600_000);
              const ready = fleet.ready.get('node-0')!;
              seconds.push((ready.at - forked) / 1000);
              rss.push(ready.maxRssMb);
              say(
                `cold start run ${r + 1}, ×${coldScale}: fork → first snapshot committed ${((ready.at - forked) / 1000).toFixed(2)} s, agent CPU ${ready.cpuSeconds.toFixed(1)} s, peak RSS ${ready.maxRssMb.toFixed(0)} MB; load ${load()}`,
              );
            } finally {
              await fleet.stop();
            }
          });
        }
        say(
          `cold start ×${coldScale}: median ${median(seconds).toFixed(2)} s, peak RSS median ${median(rss).toFixed(0)} MB${coldScale === 1 ? ' (targets ≤ 15 s, ≤ 800 MB)' : ''}`,
        );
        reportFigure({
          name: `agent cold start ×${coldScale}`,
          value: median(seconds),
          unit: 's',
          ...(coldScale === 1 ? { target: '≤ 15 s' } : {}),
          runs: seconds,
        });
        reportFigure({
          name: `agent cold start ×${coldScale} peak RSS`,
          value: median(rss),
          unit: 'MB',
          ...(coldScale === 1 ? { target: '≤ 800 MB' } : {}),
          runs: rss,
        });
      }
    }

    if (only.has('fanout')) {
      const perProcess = 10;
      const fleet = new Fleet(fanout);
      for (let p = 0; p * perProcess < fanout; p++)
        fleet.spawn(
          {
            endpoint: etcd.endpoint,
            prefix: '/bench-small',
            datapath: 'classifier',
            nodes: Array.from({ length: Math.min(perProcess, fanout - p * perProcess) }, (_, k) => ({
              node: `node-${p * perProcess + k}`,
            })),
          },
          `fanout-${p}`,
        );
      try {
        const { revision } = await store.txn([], relabel(small.layout, small.pods, 7));
        await fleet.allRealized(revision, 600_000);
        say(`${fanout} classifier agents ready (${perProcess} per process); load ${load()}`);
        const medians: number[] = [];
        const cpu: number[] = [];
        for (let r = 0; r < runs; r++) {
          const ticks = cpuTicks(etcd.pid);
          const started = clock();
          const sorted = await propagation(
            store,
            small.layout,
            (i) => relabel(small.layout, small.pods, i),
            fleet,
            fanoutSamples,
            500_000 + r * fanoutSamples,
          );
          const wall = (clock() - started) / 1000;
          const etcdCpu = (cpuTicks(etcd.pid) - ticks) / 100;
          medians.push(median(sorted));
          cpu.push(etcdCpu / wall);
          say(
            `fan-out run ${r + 1}: ${fanout} agents, median ${median(sorted).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms over ${fanoutSamples} changes; ` +
              `etcd CPU ${etcdCpu.toFixed(2)} s in ${wall.toFixed(1)} s (${((100 * etcdCpu) / wall).toFixed(0)} % of a core, ${((1000 * etcdCpu) / fanoutSamples).toFixed(1)} ms per change); load ${load()}`,
          );
        }
        say(
          `fan-out, ${fanout} agents: median propagation ${median(medians).toFixed(1)} ms; etcd ${(100 * median(cpu)).toFixed(0)} % of a core at one change at a time`,
        );
        reportFigure({
          name: `agent fan-out ${fanout} agents (median)`,
          value: median(medians),
          unit: 'ms',
          runs: medians,
        });
      } finally {
        await fleet.stop();
      }
    }
  } finally {
    store.close();
    await etcd.stop();
    if (shm) rmSync(shm, { recursive: true, force: true });
  }
}
