/**
 * The agent's direct mode without root: the in-process store keeps etcd's semantics (revisions,
 * ranges, watches from the past, compaction, leases), the node's facts are found or refused in
 * one line, the CLI refuses what direct mode cannot do — and an agent fed by the Kubernetes API
 * (fake API server → informers → in-process store) holds the same cluster, through the same
 * changes, as an agent fed by a reflector through a real etcd.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, type EtcdEvent, type EtcdStore } from '../../src/etcd/index.ts';
import { connect } from '../../src/kube/index.ts';
import { KeyLayout } from '../../src/reflected/index.ts';
import type { ClusterState } from '../../src/state/index.ts';
import { NodeFactError, nodeName, type NodeAgent } from '../../src/agent/index.ts';
import { openKubeSource, type AgentSource } from '../../src/agent/kube-source.ts';
import { podCidrsOfNode } from '../../src/agent/node-facts.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { tempDir, writeKubeconfig } from '../fake-apiserver/fixtures.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { apiReflector } from '../live/reflector-helpers.ts';
import { observe } from '../helpers/store.ts';
import { cli } from '../helpers/cli.ts';
import { namespace, nodeWithPodCidrs, pod, policy, smallCluster, startAgent } from './helpers.ts';

const until = async (check: () => boolean, what: string, ms = 20_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('the in-process store (etcd semantics for the direct mode)', () => {
  it('writes revisions, reads ranges, watches from the past, compacts, and revokes leases', async () => {
    const store = new MemoryStore({ history: 4 });
    try {
      const first = await store.txn([], [{ type: 'put', key: '/a/1', value: 'x' }]);
      const second = await store.txn(
        [{ key: '/a/1', target: 'modRevision', equals: first.revision }],
        [
          { type: 'put', key: '/a/2', value: 'y' },
          { type: 'put', key: '/b/1', value: 'z' },
        ],
      );
      assert.ok(second.succeeded);
      assert.equal(second.revision, first.revision + 1, 'one revision per transaction');
      const refused = await store.txn(
        [{ key: '/a/1', target: 'value', equals: 'nope' }],
        [{ type: 'delete', key: '/a/1' }],
      );
      assert.equal(refused.succeeded, false);
      const range = await store.range('/a/');
      assert.deepEqual(
        range.kvs.map((kv) => [kv.key, kv.value]),
        [
          ['/a/1', 'x'],
          ['/a/2', 'y'],
        ],
      );
      // A watch from the first revision replays what it missed, in its range only, then follows.
      const seen: EtcdEvent[] = [];
      const watch = await store.watch('/a/', first.revision, {
        onEvents: (e) => seen.push(...e),
        onCompacted() {},
      });
      await store.txn([], [{ type: 'delete', key: '/a/1' }]);
      await until(() => seen.length === 3, 'the watch');
      assert.deepEqual(
        seen.map((e) => `${e.type} ${e.key}`),
        ['put /a/1', 'put /a/2', 'delete /a/1'],
      );
      await watch.cancel();
      // History past its bound is compacted: a watch from before it must list again.
      for (let i = 0; i < 6; i++) await store.txn([], [{ type: 'put', key: '/c', value: String(i) }]);
      let compacted = 0;
      await store.watch('/a/', first.revision, { onEvents() {}, onCompacted: (r) => (compacted = r) });
      await until(() => compacted > 0, 'compaction');
      // A lease takes its keys with it.
      const lease = await store.grantLease(2);
      await store.txn([], [{ type: 'put', key: '/s', value: 'alive', lease: lease.id }]);
      await lease.revoke();
      assert.equal(await store.get('/s'), undefined);
    } finally {
      store.close();
    }
  });
});

describe("the node's facts", () => {
  const server = new FakeApiServer();
  const temp = tempDir('node-facts');
  before(async () => {
    await server.start();
    server.store.apply(nodeWithPodCidrs('n1', ['10.1.0.0/24', 'fd00:1::/64']));
    server.store.apply(nodeWithPodCidrs('bare'));
  });
  after(async () => {
    await server.stop();
    temp.cleanup();
  });

  it('takes the node from --node, else NODE_NAME, else says how to give it', () => {
    assert.equal(nodeName('n1', { NODE_NAME: 'n2' }), 'n1');
    assert.equal(nodeName(undefined, { NODE_NAME: 'n2' }), 'n2');
    assert.throws(() => nodeName(undefined, {}), /give --node NAME, or set NODE_NAME/);
    assert.throws(() => nodeName('Not_A_Node', {}), NodeFactError);
  });

  it("reads the pod CIDRs from the Node's spec.podCIDRs, and names what is missing", async () => {
    const api = await connect({
      kubeconfig: writeKubeconfig(temp.dir, 'kubeconfig', { server: server.serverUrl }),
      env: {},
    });
    assert.deepEqual(await podCidrsOfNode(api, 'n1'), ['10.1.0.0/24', 'fd00:1::/64']);
    await assert.rejects(podCidrsOfNode(api, 'nowhere'), /no Node of that name \(is NODE_NAME/);
    await assert.rejects(podCidrsOfNode(api, 'bare'), /has no spec.podCIDRs .*give --pod-cidr/);
    server.forbidden.add('get nodes');
    try {
      await assert.rejects(podCidrsOfNode(api, 'n1'), /cannot read its pod CIDRs: forbidden \(403\)/);
    } finally {
      server.forbidden.delete('get nodes');
    }
  });

  it('refuses on the command line what direct mode cannot do, in one line each', async () => {
    const agent = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      cli(['agent', '--datapath', 'classifier', '--listen', 'off', ...args], { env });
    const noNode = await agent(['--source', 'kube']);
    assert.equal(noNode.code, 2);
    assert.match(noNode.stderr, /which node is this\? give --node NAME, or set NODE_NAME/);
    const both = await agent(['--node', 'n1', '--source', 'kube', '--etcd', 'http://127.0.0.1:1']);
    assert.match(both.stderr, /--etcd and --source kube exclude each other/);
    const vpp = await cli(['agent', '--datapath', 'vpp-acl', '--node', 'n1'], { env: {} });
    assert.match(vpp.stderr, /--datapath vpp-acl writes its documents into etcd .*--source etcd/);
    // A Node that is not there stops the agent before it touches anything.
    const missing = await cli(
      ['agent', '--datapath', 'nftables', '--listen', 'off', '--kubeconfig', `${temp.dir}/kubeconfig`],
      { env: { NODE_NAME: 'nowhere' } },
    );
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      "palisade: node nowhere: the cluster has no Node of that name (is NODE_NAME the pod's spec.nodeName?)\n",
    );
  });
});

/** An agent on the classifier datapath over a store, in this process. */
function classifierAgent(
  store: EtcdStore,
  layout: KeyLayout,
  sourceSynced?: () => Promise<void>,
): Promise<{ agent: NodeAgent; state: ClusterState }> {
  return startAgent(store, layout, 'classifier', { node: 'n1', ...(sourceSynced ? { sourceSynced } : {}) });
}

describe('a direct agent and its API server', () => {
  it('says it is stale when the API server stops answering, and is in contact again when it answers', async () => {
    const server = new FakeApiServer();
    const temp = tempDir('direct-stale');
    const stops: (() => Promise<unknown>)[] = [];
    try {
      await server.start();
      for (const object of [nodeWithPodCidrs('n1', ['10.1.0.0/24']), ...smallCluster()])
        server.store.apply(object);
      const layout = new KeyLayout(`/direct-stale-${process.pid}`);
      const lines: string[] = [];
      const log = {
        debug() {},
        info: (_: object, line: string) => lines.push(line),
        warn: (_: object, line: string) => lines.push(line),
        error() {},
      };
      const source = await openKubeSource({
        request: {
          kubeconfig: writeKubeconfig(temp.dir, 'kubeconfig', { server: server.serverUrl }),
          env: {},
        },
        node: 'n1',
        podCidrs: [],
        needsPodCidrs: true,
        layout,
        log,
      });
      stops.push(() => source.close());
      assert.ok(source.upstream, 'direct mode has an upstream');
      const { agent, state } = await startAgent(source.store, layout, 'classifier', {
        node: 'n1',
        sourceSynced: () => source.synced(),
        upstream: source.upstream,
        staleAfterMs: 1000,
        log,
      });
      stops.push(() => agent.stop());
      await until(() => agent.state.phase === 'ready', 'ready');
      assert.equal(agent.state.stale, false);
      const port = Number(new URL(server.serverUrl).port);
      await server.stop();
      await until(() => agent.state.stale, 'stale once the API server is gone', 20_000);
      assert.ok(
        lines.includes('no contact with the Kubernetes API: what is enforced may be stale'),
        lines.join('\n'),
      );
      assert.equal(agent.state.phase, 'ready', 'what it enforces stays');
      await server.start(port);
      server.store.apply(pod('shop', 'web-3', '10.1.0.4', 'n1', { app: 'web' }));
      const podIds = (): string[] => (observe(state) as { pods: { id: string }[] }).pods.map((p) => p.id);
      await until(() => !agent.state.stale && podIds().includes('shop/web-3'), 'in contact again', 40_000);
      assert.ok(lines.includes('in contact with the Kubernetes API again'), lines.join('\n'));
    } finally {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
      await server.stop().catch(() => undefined);
      temp.cleanup();
    }
  });
});

describe('the same cluster through both modes', { skip: needsEtcd }, () => {
  const etcd = suiteEtcd();
  const server = new FakeApiServer();
  const temp = tempDir('direct-source');
  const stops: (() => Promise<unknown>)[] = [];
  before(async () => {
    if (needsEtcd) return;
    await server.start();
    for (const object of [
      nodeWithPodCidrs('n1', ['10.1.0.0/24']),
      nodeWithPodCidrs('n2', ['10.2.0.0/24']),
      ...smallCluster(),
    ])
      server.store.apply(object);
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await server.stop();
    temp.cleanup();
  });

  it('direct (API → informers → in-process store) and reflected (API → reflector → etcd) agents hold the same store', async () => {
    const kubeconfig = writeKubeconfig(temp.dir, 'kubeconfig', { server: server.serverUrl });
    const layout = new KeyLayout(`/direct-${process.pid}`);
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    const source: AgentSource = await openKubeSource({
      request: { kubeconfig, env: {} },
      node: 'n1',
      podCidrs: [],
      needsPodCidrs: true,
      layout,
      log: silent,
    });
    stops.push(() => source.close());
    assert.deepEqual(source.podCidrs, ['10.1.0.0/24'], "the pod CIDRs are the Node's");
    const direct = await classifierAgent(source.store, layout, () => source.synced());
    stops.push(() => direct.agent.stop());

    const { reflector, running } = await apiReflector(server, etcd.store, temp.dir, { layout, elect: false });
    stops.push(() => (reflector.stop(), running));
    const reflected = await classifierAgent(etcd.store, layout);
    stops.push(() => reflected.agent.stop());

    const podIds = (state: ClusterState): string[] =>
      (observe(state) as { pods: { id: string }[] }).pods.map((p) => p.id);
    /** Waits until both agents hold a state `arrived` accepts, then compares the two. */
    const same = async (what: string, arrived: (state: ClusterState) => boolean): Promise<void> => {
      await until(() => arrived(direct.state) && arrived(reflected.state), what);
      await until(
        () => direct.agent.state.phase === 'ready' && reflected.agent.state.phase === 'ready',
        `both ready ${what}`,
      );
      assert.deepEqual(observe(direct.state), observe(reflected.state), what);
    };
    await same('after the first snapshot', (state) => podIds(state).length === 4);
    assert.equal((observe(direct.state) as { policies: unknown[] }).policies.length, 1);
    server.store.apply(policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }, 80));
    server.store.apply(pod('shop', 'web-3', '10.1.0.4', 'n1', { app: 'web' }));
    server.store.remove('Pod', 'shop', 'db-2');
    server.store.apply(namespace('shop', { team: 'b' }));
    await same('after a policy, a pod, a deletion and a relabelled namespace', (state) => {
      const seen = observe(state) as { policies: unknown[]; namespaces: { labels: unknown }[] };
      return (
        seen.policies.length === 2 &&
        // The pod count alone is 4 both before and after an add and a delete: name them.
        podIds(state).join() === 'shop/db-1,shop/web-1,shop/web-2,shop/web-3' &&
        JSON.stringify(seen.namespaces).includes('"team":"b"')
      );
    });
    // A watch the server drops is resumed; a compacted one relists — both modes alike.
    server.dropWatches();
    server.store.compact();
    server.store.apply(pod('shop', 'web-4', '10.1.0.5', 'n1', { app: 'web' }));
    await same('after dropped watches and compaction', (state) => podIds(state).includes('shop/web-4'));
  });
});
