/**
 * `npm run bench -- agent-health [--pods 48000] [--runs 3] [--palisade FILE] [--label NAME]`:
 * is a node agent still answering while it realizes a large change? One `palisade agent` process
 * (FILE: the bundled executable, default dist/bin/palisade.js — pass another build's to compare)
 * enforces nftables in a network namespace (root; the classifier otherwise) over a real etcd,
 * while this process asks its /healthz every 20 ms and times each answer. Two large changes:
 *   A. `--pods` pods written in transactions of 2,000 as fast as etcd takes them (elsewhere, so
 *      they only widen the node's view of the cluster);
 *   B. one policy change that puts all of their addresses into one of the node's sets.
 * Per phase: /healthz latency p50, p99 and max, the time until the agent realized the change,
 * and whether its status lease expired (the agent logs it, and its status key would vanish).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isRoot, run } from '../src/dataplane/index.ts';
import { connectEtcd, freePort, startEtcd, type EtcdStore, type TxnOp } from '../src/etcd/index.ts';
import { encodeObject, KeyLayout } from '../src/reflected/index.ts';
import { reportFigure } from './report.ts';
import { median } from './stats.ts';

const say = (line: string): boolean => process.stdout.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
}

type Raw = Record<string, unknown>;

const pod = (name: string, ip: string, node: string, app: string): Raw => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels: { app } },
  spec: { nodeName: node, containers: [{ name: 'c', ports: [{ containerPort: 5432 }] }] },
  status: {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    hostIP: node === 'n1' ? '172.16.0.1' : '172.16.0.9',
  },
});
const policy = (from: string): Raw => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'db-from', namespace: 'shop' },
  spec: {
    podSelector: { matchLabels: { app: 'db' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { app: from } } }], ports: [{ port: 5432 }] }],
  },
});

async function write(store: EtcdStore, layout: KeyLayout, objects: readonly Raw[]): Promise<number> {
  let revision = 0;
  for (let i = 0; i < objects.length; i += 2000) {
    const ops: TxnOp[] = objects.slice(i, i + 2000).map((o) => {
      const encoded = encodeObject(layout, o, 'bench');
      return { type: 'put', key: encoded.key, value: encoded.value! };
    });
    ops.push({ type: 'put', key: `${layout.resourceVersions}pod`, value: String(i) });
    revision = (await store.txn([], ops)).revision;
  }
  return revision;
}

/** The revision the agent's status key says it realized (0 without one). */
async function realizedBy(store: EtcdStore, layout: KeyLayout): Promise<number> {
  const kv = await store.get(`${layout.base}status/nodes/n1`);
  return kv ? (JSON.parse(kv.value) as { realizedRevision: number }).realizedRevision : 0;
}

async function untilRealized(store: EtcdStore, layout: KeyLayout, revision: number): Promise<number> {
  const started = performance.now();
  while ((await realizedBy(store, layout)) < revision) {
    if (performance.now() - started > 300_000) throw new Error(`revision ${revision} not realized in 300 s`);
    await sleep(20);
  }
  return performance.now() - started;
}

/** Asks /healthz every 20 ms (never two at once) until stopped; the latencies, ms. */
function poll(url: string): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await new Promise<void>((done) => {
        const req = request(`${url}/healthz`, { agent: false }, (res) => {
          res.resume();
          res.on('end', () => done());
        });
        req.on('error', () => done());
        req.end();
      });
      latencies.push(performance.now() - started);
      await sleep(Math.max(0, 20 - (performance.now() - started)));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

function knowsRunDir(palisade: string): boolean {
  return spawnSync(process.execPath, [palisade, 'agent', '--help'], { encoding: 'utf8' }).stdout.includes(
    '--run-dir',
  );
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

interface Phase {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly realizeMs: number;
}

async function oneRun(palisade: string, pods: number): Promise<{ a: Phase; b: Phase; leaseLost: number }> {
  const root = isRoot();
  const netns = `pal-health-${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-health-'));
  const server = await startEtcd({ maxTxnOps: 2100 });
  const store = await connectEtcd({ endpoints: [server.endpoint] });
  const layout = new KeyLayout('/palisade');
  let agent: ChildProcess | undefined;
  try {
    if (root) await run('ip', ['netns', 'add', netns]);
    await write(store, layout, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      pod('web', '10.1.0.2', 'n1', 'web'),
      pod('db', '10.1.0.3', 'n1', 'db'),
      policy('web'),
    ]);
    const port = await freePort();
    const log = join(dir, 'agent.log');
    const out = openSync(log, 'a');
    agent = spawn(
      process.execPath,
      [
        ...(process.env.PALISADE_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
        palisade,
        'agent',
        '--node',
        'n1',
        '--etcd',
        server.endpoint,
        '--datapath',
        root ? 'nftables' : 'classifier',
        ...(root ? ['--netns', netns, '--pod-cidr', '10.1.0.0/24'] : []),
        '--listen',
        `127.0.0.1:${port}`,
        '--status-interval',
        '100',
        // Builds before --run-dir keep their locks in /run/palisade.
        ...(knowsRunDir(palisade) ? ['--run-dir', dir] : []),
      ],
      { stdio: ['ignore', out, out] },
    );
    closeSync(out);
    const url = `http://127.0.0.1:${port}`;
    await untilRealized(store, layout, 1);
    const many = Array.from({ length: pods }, (_, i) =>
      pod(`extra-${i}`, `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`, 'n9', 'batch'),
    );
    const phase = async (change: () => Promise<number>): Promise<Phase> => {
      const poller = poll(url);
      await sleep(200);
      const revision = await change();
      const realizeMs = await untilRealized(store, layout, revision);
      await sleep(200);
      const latencies = await poller.stop();
      return {
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        max: Math.max(...latencies),
        realizeMs,
      };
    };
    const a = await phase(() => write(store, layout, many));
    const b = await phase(() => write(store, layout, [policy('batch')]));
    const leaseLost = readFileSync(log, 'utf8')
      .split('\n')
      .filter((line) => /status lease (lost|not kept alive)/.test(line)).length;
    return { a, b, leaseLost };
  } finally {
    agent?.kill('SIGTERM');
    if (agent && agent.exitCode === null) await new Promise((r) => agent!.once('exit', r));
    store.close();
    await server.stop();
    if (root) await run('ip', ['netns', 'delete', netns]);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function agentHealthBenchmark(args: string[]): Promise<void> {
  const pods = Number(option(args, 'pods', '48000'));
  const runs = Number(option(args, 'runs', '3'));
  const palisade = resolve(option(args, 'palisade', 'dist/bin/palisade.js'));
  const label = option(args, 'label', palisade);
  say(`agent health during large changes: ${label}, ${pods} pods, ${isRoot() ? 'nftables' : 'classifier'}`);
  const results: { a: Phase; b: Phase; leaseLost: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await oneRun(palisade, pods);
    results.push(r);
    say(
      `  run ${i + 1} (load ${loadavg()[0]!.toFixed(2)}): A pods arriving: /healthz p50 ${r.a.p50.toFixed(1)} p99 ${r.a.p99.toFixed(1)} max ${r.a.max.toFixed(0)} ms, realized in ${r.a.realizeMs.toFixed(0)} ms; ` +
        `B ${pods} addresses into one set: p50 ${r.b.p50.toFixed(1)} p99 ${r.b.p99.toFixed(1)} max ${r.b.max.toFixed(0)} ms, realized in ${r.b.realizeMs.toFixed(0)} ms; lease expiries ${r.leaseLost}`,
    );
  }
  for (const [name, pick] of [
    ['A', (r: (typeof results)[number]) => r.a],
    ['B', (r: (typeof results)[number]) => r.b],
  ] as const) {
    const p99 = median(results.map((r) => pick(r).p99));
    say(
      `  ${name}: median p99 ${p99.toFixed(1)} ms (target ≤ 200), median realize ${median(results.map((r) => pick(r).realizeMs)).toFixed(0)} ms`,
    );
    reportFigure({
      name: `agent /healthz p99 during ${name === 'A' ? `${pods} pods arriving` : `a ${pods}-address change`}`,
      value: p99,
      unit: 'ms',
      target: '≤ 200 ms',
      runs: results.map((r) => pick(r).p99),
    });
  }
  say(`  lease expiries: ${results.map((r) => r.leaseLost).join(', ')} (target 0)`);
}
