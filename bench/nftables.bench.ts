/**
 * `npm run bench -- nftables [--scale F] [--events N] [--runner library|exec|both] [--families 4|46|both]`
 * (or `--ipblocks 150,300,…`: ruleset size for that many ipBlock policies, see `ipBlockSizes`):
 * the nftables renderer at shape (a) scale for one node of 100 pods — ruleset size, render and
 * first-apply time, and the kernel update path: from a pod label change, and from a policy
 * change (a policy deleted, then restored), to a committed nft transaction, with the time nft
 * itself took. As root the transactions go to a scratch network namespace; configurations
 * (libnftables in-process or an `nft` process per transaction; IPv4 only or both families) are
 * measured one after the other in the same process, each with its own namespace.
 */
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import type { Cluster, Endpoint, NetworkPolicy } from '../src/model/types.ts';
import { policyKey } from '../src/model/types.ts';
import { PolicyPipeline, type PipelineChange } from '../src/pipeline/index.ts';
import { NftablesRenderer } from '../src/datapaths/nftables/index.ts';
import { ClusterState } from '../src/state/index.ts';
import {
  execNftRunner,
  isRoot,
  libnftablesRunner,
  libnftablesUnavailable,
  recordingRunner,
  run,
  type NftRunner,
} from '../src/dataplane/index.ts';
import { median } from './stats.ts';

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
}

const p99 = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? 0;
const f2 = (v: number): string => v.toFixed(2);

export async function nftablesBenchmark(args: string[]): Promise<void> {
  const ipblocks = option(args, 'ipblocks', '');
  if (ipblocks) return ipBlockSizes(ipblocks.split(',').map(Number));
  const scale = Number(option(args, 'scale', '1'));
  const events = Number(option(args, 'events', '200'));
  const runnerChoice = option(args, 'runner', 'both');
  const familyChoice = option(args, 'families', 'both');
  const root = isRoot();
  if (!root) process.stdout.write('not root: nft apply times are skipped (rulesets are rendered only)\n');
  const generated = generateShape('a', { scale, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  const runners = runnerChoice === 'both' ? ['library', 'exec'] : [runnerChoice];
  const families: (readonly (4 | 6)[])[] =
    familyChoice === 'both' ? [[4], [4, 6]] : familyChoice === '4' ? [[4]] : [[4, 6]];
  if (root && runners.includes('library') && libnftablesUnavailable())
    process.stdout.write(`libnftables is not available: ${libnftablesUnavailable()}\n`);
  for (const kind of root ? runners : ['recording'])
    for (const family of families) await measure(cluster, scale, events, kind, family, root);
}

async function measure(
  cluster: Cluster,
  scale: number,
  events: number,
  kind: string,
  families: readonly (4 | 6)[],
  root: boolean,
): Promise<void> {
  const netns = `palisade-bench-${process.pid}`;
  if (root) {
    await run('ip', ['netns', 'delete', netns]);
    await run('ip', ['netns', 'add', netns]);
  }
  const real: NftRunner | undefined =
    kind === 'library'
      ? libnftablesRunner({ netns })
      : kind === 'exec'
        ? execNftRunner({ netns })
        : recordingRunner();
  if (!real) return;
  try {
    const applyTimes: number[] = [];
    const timed: NftRunner = {
      kind: real.kind,
      query: (command) => real.query(command),
      close: () => real.close(),
      apply(script, applying) {
        const t = performance.now();
        const echoed = real.apply(script, applying);
        applyTimes.push(performance.now() - t);
        return echoed;
      },
    };
    const state = new ClusterState();
    const renderer = new NftablesRenderer({ state, runner: timed, families });
    const pipeline = new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] });
    const started = performance.now();
    pipeline.apply({ type: 'resync', cluster });
    const total = performance.now() - started;
    const script = renderer.fullScript();
    const stats = renderer.stats();
    const groups = [...state.groupKeys()].length;
    const label = `${kind}, IPv${families.join('+')}`;
    process.stdout.write(
      `\n[${label}] shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies, ${groups} address groups; ` +
        `node-0 renders ${[...pipeline.compiledPods()].length} pods\n` +
        `ruleset: ${stats.chains} chains, ${stats.rules} rules, ${stats.sets} sets, ${stats.elements} set elements, ` +
        `${stats.mapEntries} dispatch entries; script ${(script.length / 1024).toFixed(0)} KiB\n` +
        `resync + render + apply: ${total.toFixed(0)} ms` +
        (root ? ` (of which nft: ${(applyTimes[0] ?? 0).toFixed(0)} ms)` : '') +
        '\n',
    );
    const timedEvents = (changes: (i: number) => PipelineChange[]) => {
      const committed: number[] = [];
      const cpu: number[] = [];
      const nft: number[] = [];
      const all: number[] = [];
      for (let i = 0; i < events; i++) {
        const before = applyTimes.length;
        const used = process.cpuUsage();
        const t = performance.now();
        pipeline.applyBatch(changes(i));
        const took = performance.now() - t;
        const { user, system } = process.cpuUsage(used);
        all.push(took);
        if (applyTimes.length > before) {
          committed.push(took);
          // CPU time (this process, kernel work of its netlink calls included): on the shared
          // machine the wall time measures the neighbours as much as the commit.
          cpu.push((user + system) / 1000);
          nft.push(...applyTimes.slice(before));
        }
      }
      return { committed, cpu, nft, all };
    };
    // Pod label changes: a pod takes another pod's labels (so selections really change), half of
    // them on node-0's own pods. Events whose change reaches node-0 end in one nft transaction.
    const pods = cluster.endpoints;
    const localPods = pods.filter((p) => p.node === 'node-0');
    const labels = timedEvents((i) => {
      const source = (
        i % 2 === 0 ? localPods[(i / 2) % localPods.length] : pods[(i * 7919) % pods.length]
      ) as Endpoint;
      const donor = pods[(i * 104729 + 17) % pods.length] as Endpoint;
      return [{ type: 'upsert-pod', pod: { ...source, labels: { ...donor.labels } } }];
    });
    report('pod label change', labels, events, root);
    // Policy changes: a policy of a namespace with node-0 pods deleted, then restored.
    const localNamespaces = new Set(localPods.map((p) => p.namespace));
    const localPolicies = cluster.policies.filter((p) => localNamespaces.has(p.namespace));
    const policies = timedEvents((i) => {
      const policy = localPolicies[Math.floor(i / 2) % localPolicies.length] as NetworkPolicy;
      return i % 2 === 0
        ? [{ type: 'delete-policy', key: policyKey(policy) }]
        : [{ type: 'upsert-policy', policy }];
    });
    report('policy change', policies, events, root);
    if (root) auditCost(renderer, pipeline, localPolicies[0]);
  } finally {
    real.close();
    if (root) await run('ip', ['netns', 'delete', netns]);
  }
}

/**
 * What the agent's verification costs on this table (renderers/nftables/audit.ts): a whole audit
 * after a commit changed the table (one listing, parsed and compared), and one of a table that
 * did not change since the last audit found it right (one listing and its digest).
 */
function auditCost(
  renderer: NftablesRenderer,
  pipeline: PolicyPipeline,
  policy: NetworkPolicy | undefined,
): void {
  if (!policy) return;
  const full: number[] = [];
  const unchanged: number[] = [];
  for (let i = 0; i < 5; i++) {
    pipeline.applyBatch([{ type: 'delete-policy', key: policyKey(policy) }]);
    pipeline.applyBatch([{ type: 'upsert-policy', policy }]);
    let t = performance.now();
    const differences = renderer.audit(true);
    full.push(performance.now() - t);
    if (differences.length > 0) throw new Error(`the audit found differences: ${differences.join('; ')}`);
    t = performance.now();
    renderer.audit(true);
    unchanged.push(performance.now() - t);
  }
  process.stdout.write(
    `verify (audit) of the whole table: after a commit median ${f2(median(full))} ms; unchanged since the last audit median ${f2(median(unchanged))} ms\n`,
  );
}

function report(
  what: string,
  r: { committed: number[]; cpu: number[]; nft: number[]; all: number[] },
  events: number,
  root: boolean,
): void {
  process.stdout.write(
    `${what} → committed nft transaction: median ${f2(median(r.committed))} ms, p99 ${f2(p99(r.committed))} ms ` +
      `(CPU median ${f2(median(r.cpu))} ms, p99 ${f2(p99(r.cpu))} ms) ` +
      `over the ${r.committed.length} of ${events} events that changed node-0's table` +
      (root
        ? ` (nft alone: median ${f2(median(r.nft))} ms, p99 ${f2(p99(r.nft))} ms)`
        : ' (rendered, not applied)') +
      `; all events: median ${f2(median(r.all))} ms\n`,
  );
}

/**
 * Ruleset size as ipBlock policies multiply (issue 22 §1.5): one namespace of 60 pods on node-0
 * and N policies, each selecting pods by one label and allowing one port from (or to) a block —
 * `10.0.0.0/8`, a `/16` in it, `172.16.0.0/12` or `0.0.0.0/0` — with 1–3 excepts. Rendered, not
 * applied: the rules, sets, elements and bytes of node-0's first transaction.
 */
function ipBlockSizes(counts: readonly number[]): void {
  for (const n of counts) {
    // mulberry32: small, deterministic, and without the alternating low bits of an LCG.
    let seed = 4;
    const random = (k: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * k);
    };
    const objects: object[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }];
    for (let i = 0; i < 60; i++)
      objects.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `p${i}`, namespace: 'n', labels: { app: `a${i % 12}`, tier: `t${i % 5}` } },
        spec: { nodeName: 'node-0', containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
        status: { phase: 'Running', podIP: `10.244.0.${i + 2}` },
      });
    for (let i = 0; i < n; i++) {
      const a = random(64);
      const kind = random(4);
      const cidr = ['10.0.0.0/8', `10.${a}.0.0/16`, '172.16.0.0/12', '0.0.0.0/0'][kind] as string;
      const except = Array.from({ length: 1 + random(3) }, () =>
        kind === 0
          ? `10.${random(256)}.${random(256)}.0/24`
          : kind === 1
            ? `10.${a}.${random(256)}.${random(16) * 16}/28`
            : kind === 2
              ? `172.${16 + random(16)}.${random(256)}.0/24`
              : `${[10, 172, 192][random(3)]}.${random(256)}.0.0/16`,
      );
      const selector = random(2) ? { app: `a${random(12)}` } : { tier: `t${random(5)}` };
      const ingress = random(2) === 0;
      const rule = {
        [ingress ? 'from' : 'to']: [{ ipBlock: { cidr, except } }],
        ports: [{ port: [80, 443, 8080, 53, 9090][random(5)] }],
      };
      objects.push({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: `np${i}`, namespace: 'n' },
        spec: {
          podSelector: { matchLabels: selector },
          policyTypes: ingress ? ['Ingress'] : ['Ingress', 'Egress'],
          [ingress ? 'ingress' : 'egress']: [rule],
        },
      });
    }
    const { cluster } = loadFromObjects(objects);
    const state = new ClusterState();
    const runner = recordingRunner();
    const renderer = new NftablesRenderer({ state, runner });
    new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] }).apply({ type: 'resync', cluster });
    const s = renderer.stats();
    process.stdout.write(
      `${n} ipBlock policies: ${s.chains} chains, ${s.rules} rules, ${s.sets} sets, ${s.elements} set elements; ` +
        `first transaction ${((runner.scripts[0] ?? '').length / 1024).toFixed(0)} KiB\n`,
    );
  }
}
