/**
 * `npm run bench -- reflect [--scale 1] [--changes 30000] [--samples 300] [--runs 5] [--shm]`:
 * the reflector against the fake API server (its own process, loaded with generated shape (a))
 * and a real etcd (a temp dir, or /dev/shm with --shm):
 *  1. initial reflect of the whole cluster (a reflector process with --once): wall time, peak RSS;
 *  2. steady state: `--changes` pods relabelled as fast as the server can, into etcd: changes/s;
 *  3. one pod relabelled at a time: from the API server's event to etcd's committed revision;
 *  4. `matrix --port 80` of 2,000 pods through the API double against the same from files.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectEtcd, startEtcd } from '../src/etcd/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { connect } from '../src/kube/index.ts';
import { Reflector } from '../src/reflector/index.ts';
import { KeyLayout } from '../src/reflected/index.ts';
import { writeKubeconfig } from '../test/fake-apiserver/fixtures.ts';
import { reportFigure } from './report.ts';
import { median, ms } from './stats.ts';

const HERE = new URL('.', import.meta.url).pathname;
const CLI = join(HERE, '..', 'src', 'cli', 'main.js');

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const clock = (): number => performance.timeOrigin + performance.now();

export interface FakeChild {
  readonly child: ChildProcess;
  readonly url: string;
  readonly pods: number;
  readonly objects: number;
  request<T>(message: object, reply: string): Promise<T>;
  stop(): Promise<void>;
}

export async function startFake(shape: string, scale: number): Promise<FakeChild> {
  const child = fork(join(HERE, 'fake-apiserver-child.js'), [shape, String(scale)], {
    execArgv: ['--max-old-space-size=8192'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<{ url: string; pods: number; objects: number }>((resolve, reject) => {
    child.once('message', (m: { url: string; pods: number; objects: number }) => resolve(m));
    child.once('exit', (code) => reject(new Error(`fake API server exited (${code})`)));
  });
  return {
    child,
    ...ready,
    request: <T>(message: object, reply: string) =>
      new Promise<T>((resolve) => {
        const onMessage = (m: { type: string }): void => {
          if (m.type !== reply) return;
          child.off('message', onMessage);
          resolve(m as T);
        };
        child.on('message', onMessage);
        child.send(message);
      }),
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

export async function reflectBenchmark(args: string[]): Promise<void> {
  const scale = option(args, 'scale', 1);
  const changes = option(args, 'changes', 30_000);
  const samples = option(args, 'samples', 300);
  const runs = option(args, 'runs', 5);
  const dir = mkdtempSync(join(tmpdir(), `palisade-bench-reflect-${process.pid}-`));
  const etcdDir = args.includes('--shm') ? mkdtempSync(`/dev/shm/palisade-etcd-${process.pid}-`) : undefined;
  const etcd = await startEtcd(etcdDir ? { dataDir: etcdDir } : {});
  let fake: FakeChild | undefined;
  try {
    process.stdout.write(`etcd ${etcd.endpoint}, data in ${etcd.dataDir}; load ${load()}\n`);
    fake = await startFake('a', scale);
    const kubeconfig = writeKubeconfig(dir, 'kubeconfig', { server: fake.url });
    process.stdout.write(
      `fake API server: shape (a) ×${scale}, ${fake.objects.toLocaleString('en-US')} objects (${fake.pods.toLocaleString('en-US')} pods)\n`,
    );

    // 1. Initial reflect.
    const initial = await runReflector(kubeconfig, etcd.endpoint, 'once');
    process.stdout.write(
      `initial reflect: ${initial.seconds.toFixed(1)} s (reflector CPU ${initial.cpuSeconds.toFixed(1)} s), peak RSS ${initial.maxRssMb.toFixed(0)} MB, ` +
        `${initial.stats.written.toLocaleString('en-US')} keys written in ${initial.stats.transactions.toLocaleString('en-US')} transactions (load ${load()})\n`,
    );

    reportFigure({
      name: `reflect initial shape a ×${scale}`,
      value: initial.seconds,
      unit: 's',
      target: '≤ 30 s at ×1',
    });
    reportFigure({
      name: `reflect initial shape a ×${scale} peak RSS`,
      value: initial.maxRssMb,
      unit: 'MB',
      target: '≤ 600 MB at ×1',
    });

    // 2. Steady state: many pods relabelled at once, followed by a reflector that resumes.
    const follower = spawnReflector(kubeconfig, etcd.endpoint);
    await follower.synced;
    const store = await connectEtcd({ endpoints: [etcd.endpoint] });
    const layout = new KeyLayout('/palisade');
    let puts = 0;
    let lastPut = 0;
    const watch = await store.watch(
      layout.kindPrefix('Pod'),
      (await store.range(layout.leader)).revision + 1,
      {
        onEvents: (events) => {
          puts += events.length;
          lastPut = clock();
        },
        onCompacted: () => undefined,
      },
    );
    const count = Math.min(changes, fake.pods);
    const cpuBefore = cpuSecondsOf(follower.child.pid!);
    const sent = await fake.request<{ first: number; last: number }>(
      { type: 'relabel', from: 0, count, value: 'steady' },
      'relabeled',
    );
    while (puts < count) await new Promise((r) => setTimeout(r, 5));
    await watch.cancel();
    const seconds = (lastPut - sent.first) / 1000;
    const cpu = cpuSecondsOf(follower.child.pid!) - cpuBefore;
    process.stdout.write(
      `steady state, reflector CPU: ${cpu.toFixed(2)} s for ${count.toLocaleString('en-US')} changes = ${Math.round(count / cpu).toLocaleString('en-US')} changes per CPU-second\n`,
    );
    process.stdout.write(
      `steady state: ${count.toLocaleString('en-US')} pod label changes in ${seconds.toFixed(2)} s = ${Math.round(count / seconds).toLocaleString('en-US')} changes/s into etcd ` +
        `(the server made them in ${((sent.last - sent.first) / 1000).toFixed(2)} s; load ${load()})\n`,
    );
    reportFigure({
      name: 'reflect steady state',
      value: Math.round(count / seconds),
      unit: 'changes/s',
      target: '≥ 3,000',
    });
    follower.child.kill('SIGTERM');
    await new Promise((r) => follower.child.once('exit', r));

    // 3. Latency of one change, in this process (it resumes from etcd: no list).
    const pods = generateShape('a', { scale, seed: 1 }).pods as {
      metadata: { name: string; namespace: string };
    }[];
    const api = await connect({ kubeconfig, env: {} });
    const committed = new Map<string, number>();
    let synced!: () => void;
    const isSynced = new Promise<void>((resolve) => (synced = resolve));
    const reflector = new Reflector({
      store,
      layout,
      source: { type: 'api', api, scope: { all: true } },
      elect: false,
      log: () => undefined,
      onDiagnostics: () => undefined,
      onSynced: () => synced(),
      onCommitted: (keys) => {
        const at = clock();
        for (const key of keys) committed.set(key, at);
      },
    });
    const running = reflector.run();
    await isSynced;
    const latencies: number[] = [];
    for (let i = 0; i < samples; i++) {
      const pod = pods[i * 7]!;
      const key = layout.key('Pod', pod.metadata.namespace, pod.metadata.name);
      committed.delete(key);
      const { at } = await fake.request<{ at: number }>(
        { type: 'relabelOne', index: i * 7, value: `one-${i}` },
        'applied',
      );
      while (!committed.has(key)) await new Promise((r) => setImmediate(r));
      latencies.push(committed.get(key)! - at);
    }
    reflector.stop();
    await running;
    store.close();
    latencies.sort((a, b) => a - b);
    process.stdout.write(
      `label change → committed etcd revision: median ${median(latencies).toFixed(2)} ms, p90 ${latencies[Math.floor(samples * 0.9)]!.toFixed(2)} ms, ` +
        `p99 ${latencies[Math.floor(samples * 0.99)]!.toFixed(2)} ms over ${samples} changes (from the API server's event, through HTTP, to the txn's commit; load ${load()})\n`,
    );
    reportFigure({
      name: 'reflect label change → committed revision (median)',
      value: median(latencies),
      unit: 'ms',
      target: '≤ 5 ms',
    });
    await fake.stop();
    fake = undefined;

    // 4. matrix through the API double against files, 2,000 pods (shape (a) ×0.02), alternating.
    await matrixFigure(dir, runs);
  } finally {
    await fake?.stop();
    await etcd.stop();
    if (etcdDir) rmSync(etcdDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

async function matrixFigure(dir: string, runs: number): Promise<void> {
  const files = join(dir, 'shape-a-0.02');
  await timeCommand(['generate', '--shape', 'a', '--scale', '0.02', '--seed', '1', '-o', files]);
  const fake = await startFake('a', 0.02);
  try {
    const kubeconfig = writeKubeconfig(dir, 'kubeconfig-matrix', { server: fake.url });
    const fromFiles: number[] = [];
    const fromCluster: number[] = [];
    for (let i = 0; i < runs; i++) {
      fromFiles.push(await timeCommand(['matrix', '--port', '80', '-o', 'json', '-f', files]));
      fromCluster.push(
        await timeCommand(['matrix', '--port', '80', '-o', 'json', '--kubeconfig', kubeconfig]),
      );
    }
    const [f, c] = [median(fromFiles), median(fromCluster)];
    reportFigure({
      name: 'matrix --kubeconfig vs files, 2,000 pods',
      value: Number((((c - f) / f) * 100).toFixed(1)),
      unit: '%',
      target: 'within 20 %',
      runs: fromCluster,
    });
    process.stdout.write(
      `matrix --port 80 of ${fake.pods.toLocaleString('en-US')} pods, whole process, ${runs} alternating runs: files median ${ms(f)} ` +
        `(${fromFiles.map((v) => v.toFixed(0)).join(', ')}), --kubeconfig median ${ms(c)} (${fromCluster.map((v) => v.toFixed(0)).join(', ')}): ` +
        `${(((c - f) / f) * 100).toFixed(1)}% (load ${load()})\n`,
    );
  } finally {
    await fake.stop();
  }
}

/** Runs the compiled CLI with its output discarded; resolves with the wall time in ms. */
async function timeCommand(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=64', CLI, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`palisade ${args.join(' ')} exited ${code}: ${stderr}`);
  return performance.now() - started;
}

/** User + system CPU seconds a process has used so far (Linux /proc; clock ticks of 1/100 s). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Synced {
  seconds: number;
  cpuSeconds: number;
  maxRssMb: number;
  stats: { written: number; transactions: number };
}

function spawnReflector(
  kubeconfig: string,
  endpoint: string,
  mode = 'follow',
): { child: ChildProcess; synced: Promise<Synced> } {
  const child = spawn(process.execPath, [join(HERE, 'reflect-child.js'), kubeconfig, endpoint, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const synced = new Promise<Synced>((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as Synced);
    });
    child.once('exit', (code) => reject(new Error(`reflector exited (${code}) before it synced`)));
  });
  return { child, synced };
}

async function runReflector(kubeconfig: string, endpoint: string, mode: string): Promise<Synced> {
  const { child, synced } = spawnReflector(kubeconfig, endpoint, mode);
  const result = await synced;
  await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  return result;
}
