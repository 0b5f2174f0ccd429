/**
 * The node agent against a real etcd (documents datapath: no root needed): what it writes for
 * vpp-agent equals a fresh render of what etcd holds — after the first list, after changes,
 * after a compacted watch revision (relist) and after a restart; failed realizations are
 * retried and reported (status, /readyz); the status key lives and dies with the lease; a
 * graceful stop says so.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { EtcdStore, WatchCallbacks } from '../../src/etcd/index.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { renderCluster } from '../../src/pipeline/index.ts';
import {
  aclDocuments,
  documentOps,
  loadTarget,
  sessionDocuments,
  vppKeys,
  type NodeDatapath,
} from '../../src/datapaths/index.ts';
import type { KeyLayout } from '../../src/reflected/index.ts';
import { readStatus, serveHealth, type HealthServer } from '../../src/agent/index.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { aclProblems, sessionDocumentProblems } from '../helpers/vpp-schemas.ts';
import type { Raw } from '../helpers/builders.ts';
import {
  namespace,
  pod,
  policy,
  smallCluster,
  startAgent,
  uniqueLayout,
  vppPrefix,
  writeObjects,
} from './helpers.ts';

const skip = needsEtcd;

/** The ACL documents a fresh render of `objects` gives node `node`. */
async function expectedAcls(
  layout: KeyLayout,
  objects: readonly Raw[],
  node: string,
): Promise<Map<string, string>> {
  const { cluster } = loadFromObjects(objects);
  const [rendered] = renderCluster(await loadTarget('vpp-acl'), cluster, { node });
  return aclDocuments(rendered!.output, vppKeys('vpp-acl', node, vppPrefix(layout)).acl);
}

/** The ACL documents the agent wrote, each checked against vpp-agent's model first. */
async function heldAcls(store: EtcdStore, layout: KeyLayout, node: string): Promise<Map<string, string>> {
  const keys = vppKeys('vpp-acl', node, vppPrefix(layout));
  const held = new Map((await store.range(keys.owned[0]!)).kvs.map((kv) => [kv.key, kv.value]));
  for (const [key, value] of held) assert.deepEqual(aclProblems(value), [], key);
  return held;
}

/** Keys of etcd as a sorted object (readable assertion diffs). */
const sorted = (m: Map<string, string>): Record<string, string> => Object.fromEntries([...m].sort());

/** Replaces one object (by identity) in a list. */
function replace(objects: Raw[], next: Raw): Raw[] {
  const id = (o: Raw) =>
    `${String(o.kind)}/${JSON.stringify((o.metadata as Raw).namespace)}/${String((o.metadata as Raw).name)}`;
  return [...objects.filter((o) => id(o) !== id(next)), next];
}

describe('node agent over etcd (vpp-acl documents)', { skip }, () => {
  const etcd = suiteEtcd();
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('lists, renders its node, then follows changes with only the keys that differ', async () => {
    const layout = uniqueLayout();
    let objects = smallCluster();
    const first = await writeObjects(etcd.store, layout, objects);
    const { agent } = await startAgent(etcd.store, layout, 'vpp-acl');
    cleanups.push(() => agent.stop());
    await agent.whenRealized(first);
    assert.deepEqual(
      sorted(await heldAcls(etcd.store, layout, 'n1')),
      sorted(await expectedAcls(layout, objects, 'n1')),
    );

    // A label change that takes web-1 out of the policy's peers, and a new policy.
    const before = await heldAcls(etcd.store, layout, 'n1');
    objects = replace(objects, pod('shop', 'web-1', '10.1.0.2', 'n1', { app: 'other' }));
    objects.push(policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }));
    const second = await writeObjects(etcd.store, layout, [objects.at(-2)!, objects.at(-1)!]);
    await agent.whenRealized(second);
    const after = await heldAcls(etcd.store, layout, 'n1');
    assert.deepEqual(sorted(after), sorted(await expectedAcls(layout, objects, 'n1')));
    // Unchanged ACLs were not rewritten: their keys keep their modification revision.
    const keys = vppKeys('vpp-acl', 'n1', vppPrefix(layout));
    const revisions = new Map(
      (await etcd.store.range(keys.owned[0]!)).kvs.map((kv) => [kv.key, kv.modRevision]),
    );
    for (const [key, value] of after)
      if (before.get(key) === value) assert.ok(revisions.get(key)! < second, `${key} rewritten unchanged`);

    // Deletes: the policy and a pod go.
    objects = objects.filter((o) => o !== objects.at(-1) && (o.metadata as Raw).name !== 'db-1');
    const third = await writeObjects(etcd.store, layout, [
      { delete: policy('shop', 'web-from-db', {}, {}) },
      { delete: pod('shop', 'db-1', '10.1.0.3', 'n1', {}) },
    ]);
    await agent.whenRealized(third);
    assert.deepEqual(
      sorted(await heldAcls(etcd.store, layout, 'n1')),
      sorted(await expectedAcls(layout, objects, 'n1')),
    );
  });

  it('lists again when its watch revision was compacted, and applies only what differs', async () => {
    const layout = uniqueLayout();
    let objects = smallCluster();
    const first = await writeObjects(etcd.store, layout, objects);
    // The agent's first watch starts only once history has moved on and been compacted.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let watches = 0;
    // The changes below must come after the agent's list: wait until it asks for its first
    // watch (a fixed sleep was too short on a loaded machine, and the agent then listed them).
    let watchAsked: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (watchAsked = resolve));
    const store: EtcdStore = Object.create(etcd.store) as EtcdStore;
    store.watch = async (
      prefix: string,
      from: number,
      callbacks: WatchCallbacks,
      options?: { end?: string },
    ) => {
      if (watches++ === 0) {
        watchAsked();
        await held;
      }
      return etcd.store.watch(prefix, from, callbacks, options);
    };
    const starting = startAgent(store, layout, 'vpp-acl', { node: 'n2' });
    await asked;
    objects = replace(objects, pod('shop', 'db-2', '10.2.0.3', 'n2', { app: 'db', tier: 'x' }, [5432]));
    objects.push(namespace('other'), pod('other', 'web-9', '10.2.0.9', 'n2', { app: 'web' }));
    await writeObjects(etcd.store, layout, objects.slice(-3));
    const latest = await writeObjects(etcd.store, layout, [{ delete: pod('shop', 'web-1', '', 'n1', {}) }]);
    objects = objects.filter((o) => (o.metadata as Raw).name !== 'web-1');
    await etcd.store.compact(latest);
    release();
    const { agent } = await starting;
    cleanups.push(() => agent.stop());
    await agent.whenRealized(latest);
    assert.equal(agent.state.resyncs, 1);
    assert.ok(agent.state.realizedRevision >= latest && first < latest);
    assert.deepEqual(
      sorted(await heldAcls(etcd.store, layout, 'n2')),
      sorted(await expectedAcls(layout, objects, 'n2')),
    );
  });

  it('retries a failed realization with backoff, reports it, and recovers', async () => {
    const layout = uniqueLayout();
    const objects = smallCluster();
    const first = await writeObjects(etcd.store, layout, objects);
    let failuresLeft = 0;
    const flaky = (d: NodeDatapath): NodeDatapath => ({
      ...d,
      renderer: d.renderer,
      counts: () => d.counts(),
      realize: (firstSnapshot) => {
        if (failuresLeft > 0) {
          failuresLeft--;
          return Promise.reject(new Error('injected: the datapath refused the transaction'));
        }
        return d.realize(firstSnapshot);
      },
    });
    const { agent } = await startAgent(etcd.store, layout, 'vpp-acl', { wrap: flaky });
    cleanups.push(() => agent.stop());
    let health: HealthServer | undefined = await serveHealth(agent, '127.0.0.1', 0);
    cleanups.push(() => health!.close());
    await agent.whenRealized(first);
    assert.equal((await fetch(`${health.url}/readyz`)).status, 200);

    failuresLeft = 3;
    const next = await writeObjects(etcd.store, layout, [
      policy('shop', 'deny-web', { app: 'web' }, { app: 'none' }),
    ]);
    await waitFor(() => agent.state.phase === 'failing', 'the agent to report the failure');
    const refused = await fetch(`${health.url}/readyz`);
    assert.equal(refused.status, 503);
    assert.match(await refused.text(), /not ready: the last realization failed: injected/);
    await waitFor(async () => {
      const status = await readStatus(etcd.store, layout);
      return status.nodes[0]?.record?.lastError?.message.includes('injected') === true;
    }, 'the status key to carry the error');
    await agent.whenRealized(next);
    assert.equal(failuresLeft, 0);
    assert.equal(agent.state.lastError, undefined, 'a recovered error is cleared');
    await waitFor(async () => {
      const status = await readStatus(etcd.store, layout);
      return status.nodes[0]?.record?.phase === 'ready' && status.nodes[0].record.lastError === undefined;
    }, 'the status key to drop the error');
    assert.deepEqual(
      sorted(await heldAcls(etcd.store, layout, 'n1')),
      sorted(
        await expectedAcls(
          layout,
          [...objects, policy('shop', 'deny-web', { app: 'web' }, { app: 'none' })],
          'n1',
        ),
      ),
    );
    assert.equal((await fetch(`${health.url}/readyz`)).status, 200);
    await health.close();
    health = undefined;
    cleanups.pop();
  });

  it('is not ready until the first snapshot is realized', async () => {
    const layout = uniqueLayout();
    const first = await writeObjects(etcd.store, layout, smallCluster());
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const gated = (d: NodeDatapath): NodeDatapath => ({
      ...d,
      renderer: d.renderer,
      counts: () => d.counts(),
      realize: async (f) => {
        await gate;
        return d.realize(f);
      },
    });
    const { agent } = await startAgent(etcd.store, layout, 'vpp-acl', { wrap: gated });
    cleanups.push(() => agent.stop());
    const health = await serveHealth(agent, '127.0.0.1', 0);
    cleanups.push(() => health.close());
    const early = await fetch(`${health.url}/readyz`);
    assert.equal(early.status, 503);
    assert.match(await early.text(), /first snapshot is not realized/);
    assert.equal((await fetch(`${health.url}/healthz`)).status, 200);
    assert.equal(
      (await heldAcls(etcd.store, layout, 'n1')).size,
      0,
      'nothing written before the first snapshot',
    );
    open();
    await agent.whenRealized(first);
    assert.equal((await fetch(`${health.url}/readyz`)).status, 200);
  });

  it('keeps its status under a lease: alive while running, stopped after a graceful stop, dead after a crash', async () => {
    const layout = uniqueLayout();
    const revision = await writeObjects(etcd.store, layout, smallCluster());
    const { agent } = await startAgent(etcd.store, layout, 'vpp-acl');
    await agent.whenRealized(revision);
    await waitFor(async () => {
      const n = (await readStatus(etcd.store, layout)).nodes[0];
      return n?.state === 'alive' && n.lag === 0 && n.record?.phase === 'ready';
    }, 'an alive, current status');
    const status = await readStatus(etcd.store, layout);
    assert.equal(status.nodes[0]!.record!.datapath, 'vpp-acl');
    assert.ok(status.nodes[0]!.record!.counts.tables > 0);
    await agent.stop();
    assert.equal((await readStatus(etcd.store, layout)).nodes[0]!.state, 'stopped');

    // A crash: the agent's client goes away without revoking; the lease expires.
    const { connectEtcd } = await import('../../src/etcd/index.ts');
    const own = await connectEtcd({ endpoints: [etcd.server.endpoint] });
    const crashed = await startAgent(own, layout, 'vpp-acl', { node: 'n2' });
    await crashed.agent.whenRealized(revision);
    own.close();
    await waitFor(
      async () => (await readStatus(etcd.store, layout)).nodes.find((n) => n.node === 'n2')?.state === 'dead',
      'the crashed agent to show as dead',
      10_000,
    );
    await crashed.agent.stop();
  });

  it('restarted, it reads what etcd holds and writes exactly the difference', async () => {
    const layout = uniqueLayout();
    let objects = smallCluster();
    const first = await writeObjects(etcd.store, layout, objects);
    const one = await startAgent(etcd.store, layout, 'vpp-acl');
    await one.agent.whenRealized(first);
    await one.agent.stop();
    const keys = vppKeys('vpp-acl', 'n1', vppPrefix(layout));
    const before = new Map(
      (await etcd.store.range(keys.owned[0]!)).kvs.map((kv) => [kv.key, kv.modRevision]),
    );
    objects = replace(objects, pod('shop', 'web-1', '10.1.0.2', 'n1', { app: 'other' }));
    const changed = await writeObjects(etcd.store, layout, [objects.at(-1)!]);
    const two = await startAgent(etcd.store, layout, 'vpp-acl');
    cleanups.push(() => two.agent.stop());
    await two.agent.whenRealized(changed);
    const held = await heldAcls(etcd.store, layout, 'n1');
    assert.deepEqual(sorted(held), sorted(await expectedAcls(layout, objects, 'n1')));
    const after = new Map((await etcd.store.range(keys.owned[0]!)).kvs.map((kv) => [kv.key, kv.modRevision]));
    const rewritten = [...after].filter(([k, r]) => before.get(k) !== r).length;
    assert.ok(rewritten < after.size, `every key rewritten (${rewritten} of ${after.size})`);
  });
});

async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('vpp-agent documents', () => {
  it('ACL values use exactly the field names of vpp-agent’s ligato.vpp.acl.ACL proto', async () => {
    const { cluster } = loadFromObjects(smallCluster());
    const [rendered] = renderCluster(await loadTarget('vpp-acl'), cluster, { node: 'n1' });
    const documents = aclDocuments(rendered!.output, vppKeys('vpp-acl', 'n1').acl);
    // Checked against vpp-agent's own model (test/fixtures/vpp-agent: ligato.vpp.acl.ACL).
    assert.ok(documents.size > 0);
    for (const [key, text] of documents) {
      assert.match(key, /^\/vnf-agent\/n1\/config\/vpp\/acls\/v2\/acl\/[^/]+$/);
      assert.deepEqual(aclProblems(text), [], key);
      assert.equal(key.split('/').at(-1), (JSON.parse(text) as { name: string }).name);
    }
  });

  it('vpptcp: one document for the global table and one per local pod, rules without a shifting index', async () => {
    const { cluster } = loadFromObjects(smallCluster());
    const [rendered] = renderCluster(await loadTarget('vpptcp'), cluster, { node: 'n1' });
    const keys = vppKeys('vpptcp', 'n1');
    const documents = sessionDocuments(rendered!.output, keys.sessions);
    assert.deepEqual([...documents.keys()].sort(), [
      `${keys.sessions}global`,
      `${keys.sessions}local/shop-db-1`,
      `${keys.sessions}local/shop-web-1`,
    ]);
    const total = [...documents.values()].reduce(
      (n, text) => n + (JSON.parse(text) as { rules: unknown[] }).rules.length,
      0,
    );
    assert.equal(total, rendered!.output.rules.length);
    // Each rule is VPP's session_rule_add_del (test/fixtures/vpp-api/session.api) in its JSON form.
    for (const [key, text] of documents) assert.deepEqual(sessionDocumentProblems(text), [], key);
    // A new pod that sorts first shifts every application-namespace index; no other document changes.
    const more = loadFromObjects([
      ...smallCluster(),
      pod('shop', 'aaa', '10.1.0.9', 'n1', { app: 'x' }),
    ] as never);
    const [after] = renderCluster(await loadTarget('vpptcp'), more.cluster, { node: 'n1' });
    const ops = documentOps(documents, sessionDocuments(after!.output, keys.sessions));
    assert.deepEqual(
      ops.map((o) => `${o.type} ${o.key.slice(keys.sessions.length)}`),
      ['put local/shop-aaa'],
    );
  });
});
