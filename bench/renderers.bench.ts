/**
 * `npm run bench -- renderers [--scale F] [--runs N]`: the seed renderers at shape (a) scale for
 * one node of 100 pods — render time and output size for VPP ACL, VPPTCP and Neutron (Neutron
 * renders the whole cluster: security groups are cluster-wide) — and how the combined local
 * tables grow as the peers of one pod grow (CombineRules adds rules per other pod that
 * restricts it: where per-pair expansion explodes, and how sharing tables by content curbs it).
 */
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { buildTarget } from '../src/pipeline/index.ts';
import { loadTarget, type TargetInstance } from '../src/datapaths/index.ts';
import { RendererCache } from '../src/datapaths/cache/index.ts';
import type { Cluster } from '../src/model/types.ts';
import { median, timeRuns } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

/** The renderer cache a VPP target's instance renders from (its renderer). */
function cacheOf(instance: TargetInstance<unknown>): RendererCache {
  if (!(instance.renderer instanceof RendererCache)) throw new Error('not a renderer-cache target');
  return instance.renderer;
}

const kib = (value: unknown): string => `${(JSON.stringify(value).length / 1024).toFixed(0)} KiB`;

export async function renderersBenchmark(args: string[]): Promise<void> {
  const scale = option(args, 'scale', 1);
  const runs = option(args, 'runs', 3);
  const generated = generateShape('a', { scale, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  process.stdout.write(
    `shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies; node-0\n`,
  );
  await vppFigures('vpp-acl', cluster, runs);
  await vppFigures('vpptcp', cluster, runs);
  const neutron = await loadTarget('neutron');
  const { instance } = buildTarget(neutron, cluster);
  const { millis: times, result: rendering } = timeRuns(runs, () => instance.output());
  const rules = rendering.security_groups.reduce((n, g) => n + g.rules.length, 0);
  process.stdout.write(
    `neutron  whole cluster: render median ${median(times).toFixed(0)} ms; ${rendering.security_groups.length} security groups, ${rules} rules, ${rendering.ports.length} ports; ${kib(rendering)}\n`,
  );
  await growth();
}

/** One VPP target on node-0: store + compile + combine once, then its rendering `runs` times. */
async function vppFigures(name: 'vpp-acl' | 'vpptcp', cluster: Cluster, runs: number): Promise<void> {
  const target = await loadTarget(name);
  const t0 = performance.now();
  const { instance } = buildTarget(target, cluster, { node: 'node-0' });
  const compile = performance.now() - t0;
  const { millis: times, result: output } = timeRuns(runs, () => instance.output());
  const count = 'acls' in output ? output.acls.reduce((n, a) => n + a.rules.length, 0) : output.rules.length;
  const { snapshot } = cacheOf(instance);
  process.stdout.write(
    `${name.padEnd(8)} store + compile + combine ${compile.toFixed(0)} ms; render median ${median(times).toFixed(1)} ms; ` +
      `${snapshot.tables.size} local tables for ${snapshot.binding.size} pods; ${count} ${name === 'vpp-acl' ? 'ACL rules' : 'session rules'}; ${kib(output)}\n`,
  );
}

/**
 * One server pod whose ingress allows N client pods (one label), each client restricted on
 * egress to a different port: CombineRules adds rules per client to the server's table.
 */
async function growth(): Promise<void> {
  const target = await loadTarget('vpp-acl');
  process.stdout.write('combined-table growth (one server, N clients each allowing it a different port):\n');
  for (const n of [1, 10, 100, 1000]) {
    const objects: object[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'g' } }];
    objects.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'server', namespace: 'g', labels: { app: 'server' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: '10.9.0.1' },
    });
    for (let i = 0; i < n; i++) {
      objects.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `client-${i}`, namespace: 'g', labels: { app: 'client', slot: String(i) } },
        spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
        status: { phase: 'Running', podIP: `10.10.${Math.floor(i / 250)}.${(i % 250) + 1}` },
      });
      objects.push({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: `client-${i}`, namespace: 'g' },
        spec: {
          podSelector: { matchLabels: { slot: String(i) } },
          policyTypes: ['Egress'],
          egress: [{ ports: [{ port: 1000 + i }] }],
        },
      });
    }
    objects.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'server', namespace: 'g' },
      spec: {
        podSelector: { matchLabels: { app: 'server' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }],
      },
    });
    const { cluster } = loadFromObjects(objects);
    const t = performance.now();
    const { instance } = buildTarget(target, cluster, { node: 'n1' });
    const millis = performance.now() - t;
    const cache = cacheOf(instance);
    const server = cache.localTable('g/server');
    const acl = instance.output();
    const aclRules = acl.acls.reduce((sum, a) => sum + a.rules.length, 0);
    process.stdout.write(
      `  N=${String(n).padStart(4)}: server's combined table ${server?.rules.length ?? 0} rules; ${cache.snapshot.tables.size} distinct local tables for ${n + 1} pods; ${aclRules} ACL rules on the node; ${millis.toFixed(0)} ms\n`,
    );
  }
}
