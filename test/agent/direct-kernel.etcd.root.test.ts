/**
 * Both ways to run, one kernel state (root, etcd): the same scenario — a cluster served by the
 * fake API server, then a policy added, a pod added and one deleted, a namespace relabelled —
 * enforced by two `palisade agent` processes on nftables, each in its own network namespace:
 * one in direct mode (`--source kube`: it watches the API itself, its node from NODE_NAME and its
 * pod CIDRs from the Node object), one in reflected mode (a reflector writes the API into a real
 * etcd; the agent watches etcd, and reads only its Node's pod CIDRs from the API). After each step both tables are a fresh render of the API's
 * objects and are the same table, listed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nftRunner } from '../../src/dataplane/index.ts';
import { parseCidr } from '../../src/net/ip.ts';
import { KeyLayout } from '../../src/reflected/index.ts';
import { freePort } from '../../src/etcd/index.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { writeKubeconfig } from '../fake-apiserver/fixtures.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { apiReflector } from '../live/reflector-helpers.ts';
import { needsRoot, scratchNetns } from '../helpers/kernel.ts';
import type { Raw } from '../helpers/builders.ts';
import { AgentProcess, until } from './fault-world.ts';
import { distanceFromFresh, namespace, nodeWithPodCidrs, pod, policy, smallCluster } from './helpers.ts';

const skip = needsEtcd || needsRoot('comparing the direct and reflected agents in the kernel');
const POD_CIDR = '10.1.0.0/24';

/**
 * The namespace's table as nft lists it, less what names the agent instance rather than the
 * policy: handles (the order of its transactions), the fingerprint set's element (its writer
 * id) and its conntrack mark values: the generation's stamp in the mark's high 16 bits
 * (base-chains.ts), written by nft as the stamp or the stamp with the low 16 bits set. The
 * generation counts the agent's commits, so it may be small: "above 2^24" missed a stamp of
 * generation 26 (0x1b0000), and the test failed now and then.
 */
function isGenerationStamp(value: number): boolean {
  const low = value % 0x10000;
  return value >= 0x10000 && Number.isInteger(value) && (low === 0 || low === 0xffff);
}

function table(netns: string): string {
  const runner = nftRunner({ netns });
  try {
    const listed = JSON.parse(runner.query('list table inet palisade') ?? '{}') as unknown;
    return JSON.stringify(listed, (key, value: unknown) => {
      if (key === 'handle') return undefined;
      if (typeof value === 'number' && isGenerationStamp(value)) return 'instance-mark';
      const set = (value as { set?: { name?: string; elem?: unknown } } | null)?.set;
      if (set?.name === 'fingerprint') return { set: { ...set, elem: 'instance' } };
      return value;
    });
  } finally {
    runner.close();
  }
}

describe('direct and reflected agents give the same kernel state', { skip }, () => {
  // Registered first, so it runs before etcd and the namespaces go.
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  const etcd = suiteEtcd();
  const directNs = skip ? 'unused' : scratchNetns('pal-direct');
  const reflectedNs = skip ? 'unused' : scratchNetns('pal-reflect');

  it('holds a fresh render of the API in both namespaces, and the same table, through changes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-direct-kernel-'));
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    const server = new FakeApiServer();
    await server.start();
    cleanups.push(() => server.stop());
    let objects: Raw[] = [
      nodeWithPodCidrs('n1', [POD_CIDR]),
      nodeWithPodCidrs('n2', ['10.2.0.0/24']),
      ...smallCluster(),
    ];
    for (const object of objects) server.store.apply(object);
    const kubeconfig = writeKubeconfig(dir, 'kubeconfig', { server: server.serverUrl });
    const layout = new KeyLayout(`/direct-kernel-${process.pid}`);

    const { reflector, running } = await apiReflector(server, etcd.store, dir, { layout, elect: false });
    cleanups.push(() => (reflector.stop(), running));

    const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
    const common = ['--datapath', 'nftables', '--verify-interval', '0', '--status-interval', '50'];
    const [directPort, reflectedPort] = [await freePort(), await freePort()];
    const direct = new AgentProcess(
      [
        ...common,
        '--kubeconfig',
        kubeconfig,
        '--netns',
        directNs,
        '--run-dir',
        join(dir, 'run-direct'),
        '--listen',
        `127.0.0.1:${directPort}`,
      ],
      { ...env, NODE_NAME: 'n1' },
      directPort,
    );
    const reflected = new AgentProcess(
      [
        ...common,
        '--node',
        'n1',
        '--etcd',
        etcd.server.endpoint,
        '--prefix',
        layout.base.replace(/\/v1\/$/, ''),
        // Its pod CIDRs from its Node too: an agent reflected through etcd may still read that.
        '--kubeconfig',
        kubeconfig,
        '--netns',
        reflectedNs,
        '--run-dir',
        join(dir, 'run-reflected'),
        '--listen',
        `127.0.0.1:${reflectedPort}`,
      ],
      env,
      reflectedPort,
    );
    for (const agent of [direct, reflected]) {
      agent.start();
      cleanups.push(async () => {
        agent.signal('SIGTERM');
        await until(
          'the agent exits',
          () => agent.child?.exitCode !== null || agent.child?.signalCode !== null,
          5000,
        ).catch(() => agent.kill());
      });
    }

    const cidr = parseCidr(POD_CIDR);
    assert.ok(cidr.ok);
    /** Both tables are a fresh render of `objects`, and the same table. */
    const converged = async (what: string): Promise<void> => {
      for (const [agent, netns] of [
        [direct, directNs],
        [reflected, reflectedNs],
      ] as const)
        await until(
          what,
          async () =>
            (await agent.readyz())?.status === 200 &&
            distanceFromFresh(netns, objects, 'n1', [cidr.value]) === 0,
          20_000,
        ).catch(() =>
          assert.fail(`${what}: ${netns} is not a fresh render of the API's objects\n${agent.log}`),
        );
      assert.equal(table(directNs), table(reflectedNs), `${what}: the two tables differ`);
    };
    await converged('the first snapshot');
    for (const agent of [direct, reflected])
      assert.match(agent.log, /pod CIDRs from Node n1: 10\.1\.0\.0\/24/);
    assert.match(
      table(directNs),
      /"addr":"10\.1\.0\.0","len":24/,
      "the Node's pod CIDR is dropped until a pod owns the address",
    );

    const added = [
      policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }, 80),
      pod('shop', 'web-3', '10.1.0.4', 'n1', { app: 'web' }),
      namespace('shop', { team: 'b' }),
    ];
    for (const object of added) server.store.apply(object);
    server.store.remove('Pod', 'shop', 'db-1');
    objects = [
      ...objects.filter(
        (o) =>
          !((o.metadata as Raw).name === 'db-1') &&
          !(o.kind === 'Namespace' && (o.metadata as Raw).name === 'shop'),
      ),
      ...added,
    ];
    await converged('after a policy, a pod, a deletion and a relabelled namespace');
  });
});
