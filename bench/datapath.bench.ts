/**
 * `npm run bench -- datapath [--runs N]`: the cost of enforcement on real packets. Two pods in a
 * lab (client and server on one node); the node's table is rendered from a cluster of those two
 * pods plus a generated shape (a) cluster sized to hold about 1, 100 and 10,000 policies, and
 * compared side by side in one run with no table at all: TCP throughput (iperf3, Debian package
 * iperf3) and the new-connection rate (connect + echo, from the client's pod agent).
 * Needs root.
 */
import { generateShape } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { NftablesRenderer } from '../src/datapaths/nftables/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { isRoot, nftRunner, run } from '../src/dataplane/index.ts';
import { Lab } from '../src/lab/index.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './stats.ts';
import { connectionRate, labObjects, podAndPolicyObjects, throughput } from './lab-traffic.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

export async function datapathBenchmark(args: string[]): Promise<void> {
  if (!isRoot()) {
    process.stdout.write('the datapath benchmark needs root (network namespaces, nftables); skipped\n');
    return;
  }
  const runs = option(args, 'runs', 3);
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-bench-'));
  const loaded = loadFromObjects(labObjects);
  const lab = await Lab.up('bench', labObjects, loaded.cluster, { stateRoot, nodes: 1 });
  const node = lab.plan.nodes[0];
  const server = lab.plan.pods.find((p) => p.name === 'server');
  const client = lab.plan.pods.find((p) => p.name === 'client');
  if (!node || !server || !client) throw new Error('lab plan without client and server');
  const serverIp = server.ips[0] as string;
  const iperf = await run('iperf3', ['--version']);
  if (iperf.code !== 0)
    process.stdout.write('iperf3 is not installed (apt-get install iperf3): throughput skipped\n');
  try {
    const configurations: { label: string; policies: number; load: () => void }[] = [
      { label: 'no policy', policies: 0, load: () => void 0 },
      ...[
        { label: '~1 policy', scale: 0 },
        { label: '~100 policies', scale: 0.00134 },
        { label: '~10,000 policies', scale: 0.134 },
      ].map(({ label, scale }) => {
        const objects: object[] = podAndPolicyObjects(lab);
        if (scale > 0) {
          const g = generateShape('a', { scale, seed: 3 });
          objects.push(...g.namespaces, ...g.pods, ...g.policies);
        }
        const cluster = loadFromObjects(objects).cluster;
        return {
          label,
          policies: cluster.policies.length,
          load: () => {
            const state = new ClusterState();
            const renderer = new NftablesRenderer({ state, runner: nftRunner({ netns: node.netns }) });
            new PolicyPipeline({ state, node: 'node-0', renderers: [renderer] }).apply({
              type: 'resync',
              cluster,
            });
          },
        };
      }),
    ];
    // Thousands of short connections per run: let the client reuse ports in TIME_WAIT.
    await run('sysctl', ['-q', '-w', 'net.ipv4.tcp_tw_reuse=1', 'net.ipv4.ip_local_port_range=1024 65000'], {
      netns: client.netns,
    });
    // Configurations take turns within each run, so a drift of the machine hits them all alike.
    const rates = configurations.map(() => [] as number[]);
    const throughputs = configurations.map(() => [] as number[]);
    for (let i = 0; i < runs; i++) {
      for (const [c, configuration] of configurations.entries()) {
        await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: node.netns });
        configuration.load();
        rates[c]?.push(await connectionRate(lab, client.id, serverIp));
        if (iperf.code === 0) throughputs[c]?.push(await throughput(server.netns, client.netns, serverIp));
      }
    }
    process.stdout.write('configuration          policies   TCP throughput   new connections/s\n');
    for (const [c, configuration] of configurations.entries()) {
      const t = throughputs[c] ?? [];
      const r = rates[c] ?? [];
      process.stdout.write(
        `${configuration.label.padEnd(22)} ${String(configuration.policies).padStart(8)}   ` +
          `${t.length ? `${(median(t) / 1e9).toFixed(2)} Gbit/s` : 'n/a'}`.padStart(14) +
          `   ${median(r).toFixed(0).padStart(17)}   (runs: ${r.map((x) => x.toFixed(0)).join(', ')})\n`,
      );
    }
  } finally {
    lab.close();
    await Lab.down('bench', { stateRoot });
    rmSync(stateRoot, { recursive: true, force: true });
  }
}
