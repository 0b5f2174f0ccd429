/**
 * `npm run bench -- renderers [--scale F] [--runs N]`: the seed renderers at shape (a) scale for
 * one node of 100 pods — render time and output size for VPP ACL, VPPTCP and Neutron (Neutron
 * renders the whole cluster: security groups are cluster-wide) — and how the combined local
 * tables grow as the peers of one pod grow (CombineRules adds rules per other pod that
 * restricts it: where per-pair expansion explodes, and how sharing tables by content curbs it).
 */
import { stateGroupLookup } from '../src/configurator/index.ts';
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { RendererCache } from '../src/renderers/cache/index.ts';
import { renderAcls } from '../src/renderers/vpp-acl/index.ts';
import { renderSessionRules } from '../src/renderers/vpptcp/index.ts';
import { renderNeutron } from '../src/renderers/neutron/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { median } from './stats.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const kib = (value: unknown): string => `${(JSON.stringify(value).length / 1024).toFixed(0)} KiB`;

export function renderersBenchmark(args: string[]): void {
  const scale = option(args, 'scale', 1);
  const runs = option(args, 'runs', 3);
  const generated = generateShape('a', { scale, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  process.stdout.write(
    `shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies; node-0\n`,
  );
  for (const target of ['vpp-acl', 'vpptcp'] as const) {
    const side = target === 'vpp-acl' ? 'ingress' : 'egress';
    const state = new ClusterState();
    const cache = new RendererCache({ side, groups: stateGroupLookup(state) });
    const pipeline = new PolicyPipeline({ state, node: 'node-0', renderers: [cache] });
    const t0 = performance.now();
    pipeline.apply({ type: 'resync', cluster });
    const compile = performance.now() - t0;
    const times: number[] = [];
    let output: unknown;
    let count = 0;
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      if (target === 'vpp-acl') {
        const r = renderAcls(cache.snapshot, state);
        output = r;
        count = r.acls.reduce((n, a) => n + a.rules.length, 0);
      } else {
        const r = renderSessionRules(cache.snapshot, state);
        output = r;
        count = r.rules.length;
      }
      times.push(performance.now() - t);
    }
    process.stdout.write(
      `${target.padEnd(8)} store + compile + combine ${compile.toFixed(0)} ms; render median ${median(times).toFixed(1)} ms; ` +
        `${cache.snapshot.tables.size} local tables for ${cache.snapshot.binding.size} pods; ${count} ${target === 'vpp-acl' ? 'ACL rules' : 'session rules'}; ${kib(output)}\n`,
    );
  }
  const state = new ClusterState();
  state.resync(cluster);
  const times: number[] = [];
  let neutron = renderNeutron(state);
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    neutron = renderNeutron(state);
    times.push(performance.now() - t);
  }
  const rules = neutron.security_groups.reduce((n, g) => n + g.rules.length, 0);
  process.stdout.write(
    `neutron  whole cluster: render median ${median(times).toFixed(0)} ms; ${neutron.security_groups.length} security groups, ${rules} rules, ${neutron.ports.length} ports; ${kib(neutron)}\n`,
  );
  growth();
}

/**
 * One server pod whose ingress allows N client pods (one label), each client restricted on
 * egress to a different port: CombineRules adds rules per client to the server's table.
 */
function growth(): void {
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
    const state = new ClusterState();
    const cache = new RendererCache({ side: 'ingress', groups: stateGroupLookup(state) });
    const t = performance.now();
    new PolicyPipeline({ state, node: 'n1', renderers: [cache] }).apply({ type: 'resync', cluster });
    const millis = performance.now() - t;
    const server = cache.localTable('g/server');
    const acl = renderAcls(cache.snapshot, state);
    const aclRules = acl.acls.reduce((sum, a) => sum + a.rules.length, 0);
    process.stdout.write(
      `  N=${String(n).padStart(4)}: server's combined table ${server?.rules.length ?? 0} rules; ${cache.snapshot.tables.size} distinct local tables for ${n + 1} pods; ${aclRules} ACL rules on the node; ${millis.toFixed(0)} ms\n`,
    );
  }
}
