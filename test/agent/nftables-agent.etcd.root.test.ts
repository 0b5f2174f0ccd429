/**
 * The node agent on the nftables datapath, in a real network namespace with a real etcd (root):
 * fail-closed before the first snapshot, the kernel's table ≡ a fresh render of what etcd holds
 * after the first list, after changes and after a restart over changes made while it was down;
 * the table stays after a graceful stop; a second agent on the same namespace is refused by the
 * datapath's lock; `--cleanup` removes the table.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nftRunner } from '../../src/dataplane/index.ts';
import { parseCidr } from '../../src/net/ip.ts';
import { ClusterState } from '../../src/state/index.ts';
import type { KeyLayout } from '../../src/reflected/index.ts';
import { openNodeDatapath } from '../../src/datapaths/index.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { needsRoot, scratchNetns } from '../helpers/kernel.ts';
import type { Raw } from '../helpers/builders.ts';
import {
  distanceFromFresh,
  pod,
  policy,
  smallCluster,
  startAgent,
  uniqueLayout,
  writeObjects,
} from './helpers.ts';

const skip = needsEtcd || needsRoot('the nftables agent test');
const POD_CIDRS = [parseCidr('10.1.0.0/24')].map((r) => (r.ok ? r.value : assert.fail('cidr')));

const distance = (netns: string, objects: readonly Raw[], node: string): number | 'replace' =>
  distanceFromFresh(netns, objects, node, POD_CIDRS);

function tableExists(netns: string): boolean {
  const runner = nftRunner({ netns });
  try {
    return (runner.query('list tables') ?? '').includes('palisade');
  } finally {
    runner.close();
  }
}

describe('node agent on nftables in a network namespace', { skip }, () => {
  const etcd = suiteEtcd();
  const netns = skip ? 'unused' : scratchNetns('pal-agent');
  const stops: (() => Promise<void>)[] = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });
  const nft = (layout: KeyLayout, options: Parameters<typeof startAgent>[3] = {}) =>
    startAgent(etcd.store, layout, 'nftables', { ...options, context: { netns, podCidrs: POD_CIDRS } });

  it('fails closed at once, then holds exactly a fresh render through changes, stop and restart', async () => {
    const layout = uniqueLayout();
    let objects = smallCluster();
    const first = await writeObjects(etcd.store, layout, objects);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const one = await nft(layout, {
      wrap: (d) => ({
        ...d,
        renderer: d.renderer,
        counts: () => d.counts(),
        realize: async (f) => (await gate, d.realize(f)),
      }),
    });
    stops.push(() => one.agent.stop());
    // Before the first snapshot: an empty table (no pod dispatch: the pod CIDR is dropped).
    assert.ok(tableExists(netns), 'an empty table is installed before the first snapshot');
    assert.equal(one.agent.state.phase, 'starting');
    open();
    await one.agent.whenRealized(first);
    assert.equal(distance(netns, objects, 'n1'), 0);
    assert.ok(one.agent.state.counts.rules > 0);

    objects = objects.filter((o) => (o.metadata as Raw).name !== 'db-from-web');
    objects.push(policy('shop', 'web-only-db', { app: 'web' }, { app: 'db' }, 80));
    const second = await writeObjects(etcd.store, layout, [
      { delete: policy('shop', 'db-from-web', {}, {}) },
      objects.at(-1)!,
    ]);
    await one.agent.whenRealized(second);
    assert.equal(distance(netns, objects, 'n1'), 0);

    // A second agent on the same namespace is refused while the first holds the datapath.
    await assert.rejects(
      openNodeDatapath('nftables', { node: 'n1', state: new ClusterState(), store: etcd.store, netns }),
      /lock|held/i,
    );

    await one.agent.stop();
    stops.pop();
    assert.ok(tableExists(netns), 'the table stays after a graceful stop');
    // Changes while no agent runs; a new agent converges to them.
    objects = objects.map((o) =>
      (o.metadata as Raw).name === 'db-1'
        ? pod('shop', 'db-1', '10.1.0.3', 'n1', { app: 'cache' }, [5432])
        : o,
    );
    objects.push(pod('shop', 'web-3', '10.1.0.4', 'n1', { app: 'web' }));
    const third = await writeObjects(
      etcd.store,
      layout,
      objects.slice(-2).concat(objects.filter((o) => (o.metadata as Raw).name === 'db-1')),
    );
    assert.notEqual(distance(netns, objects, 'n1'), 0);
    const two = await nft(layout);
    stops.push(() => two.agent.stop());
    await two.agent.whenRealized(third);
    assert.equal(distance(netns, objects, 'n1'), 0);
    await two.agent.stop();
    stops.pop();

    const cleaner = await openNodeDatapath('nftables', {
      node: 'n1',
      state: new ClusterState(),
      store: etcd.store,
      netns,
    });
    try {
      assert.match(await cleaner.cleanup(), /deleted table inet palisade/);
    } finally {
      await cleaner.close();
    }
    assert.ok(!tableExists(netns), 'cleanup removed the table');
  });
});
