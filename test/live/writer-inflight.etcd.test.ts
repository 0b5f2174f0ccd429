/**
 * The reflector's writer against a real etcd while one of its transactions is in flight: a
 * change to a key that arrives before the transaction's answer is judged against what etcd holds
 * once it commits, not against what it held before. The fault trials found the bug this guards:
 * a policy deleted and put back as it was while the delete was in flight looked unchanged, was
 * dropped, and etcd ended without it (`etcd misses: NetworkPolicy shop/db-from-web`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { EtcdStore, TxnCompare, TxnOp, TxnResult } from '../../src/etcd/index.ts';
import { EtcdWriter } from '../../src/reflector/index.ts';
import { KeyLayout } from '../../src/reflected/index.ts';
import type { RawApiObject } from '../../src/kube/index.ts';
import { needsEtcd, suiteEtcd } from './etcd-fixture.ts';

const stream = { kind: 'NetworkPolicy' } as const;

/**
 * The store with its transactions held while the gate is closed: `held()` resolves with the
 * release of the next one; `open()` lets every transaction through from then on.
 */
function gated(store: EtcdStore) {
  let closed = false;
  const waiting: (() => void)[] = [];
  let arrived: ((release: () => void) => void) | undefined;
  const wrapped: EtcdStore = Object.create(store) as EtcdStore;
  wrapped.txn = async (compares: readonly TxnCompare[], success: readonly TxnOp[]): Promise<TxnResult> => {
    if (closed)
      await new Promise<void>((release) => {
        if (arrived) arrived(release);
        else waiting.push(release);
        arrived = undefined;
      });
    return store.txn(compares, success);
  };
  return {
    store: wrapped,
    close: (): void => {
      closed = true;
    },
    open: (): void => {
      closed = false;
      for (const release of waiting.splice(0)) release();
    },
    held: (): Promise<() => void> => {
      const first = waiting.shift();
      return first ? Promise.resolve(first) : new Promise((resolve) => (arrived = resolve));
    },
  };
}

function policy(name: string, port: number): RawApiObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'shop' },
    spec: {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port }] }],
    },
  };
}

describe('the reflector writer with a transaction in flight', { skip: needsEtcd }, () => {
  const etcd = suiteEtcd();

  async function writer(root: string) {
    const gate = gated(etcd.store);
    const w = new EtcdWriter({ layout: new KeyLayout(root), store: gate.store });
    await w.load();
    return { w, ...gate };
  }

  async function value(root: string): Promise<string | undefined> {
    return (await etcd.store.range(new KeyLayout(root).objects)).kvs[0]?.value;
  }

  async function names(root: string): Promise<string[]> {
    const prefix = new KeyLayout(root).objects;
    return (await etcd.store.range(prefix)).kvs.map((kv) => kv.key.slice(prefix.length)).sort();
  }

  it('a key deleted in flight and put back as it was is put back', async () => {
    const root = `/inflight-${process.pid}-a`;
    const { w, close, open, held } = await writer(root);
    w.upsert(stream, policy('db-from-web', 5432), '1');
    await w.idle();
    assert.equal((await names(root)).length, 1);

    close();
    w.remove(stream, policy('db-from-web', 5432), '2');
    const release = await held(); // the delete is in flight
    w.upsert(stream, policy('db-from-web', 5432), '3');
    release();
    open();
    await w.idle();
    assert.equal(
      (await names(root)).length,
      1,
      'etcd holds the policy put back while its delete was in flight',
    );
  });

  it('a key changed in flight and changed back is changed back', async () => {
    const root = `/inflight-${process.pid}-b`;
    const { w, close, open, held } = await writer(root);
    w.upsert(stream, policy('db-from-web', 5432), '1');
    await w.idle();
    const before = await value(root);
    assert.ok(before?.includes('5432'));

    close();
    w.upsert(stream, policy('db-from-web', 6000), '2');
    const release = await held(); // the change to 6000 is in flight
    w.upsert(stream, policy('db-from-web', 5432), '3');
    release();
    open();
    await w.idle();
    assert.equal(await value(root), before, 'etcd holds port 5432 again');
  });

  it('a key put in flight and deleted meanwhile is deleted', async () => {
    const root = `/inflight-${process.pid}-c`;
    const { w, close, open, held } = await writer(root);
    close();
    w.upsert(stream, policy('db-from-web', 5432), '1');
    const release = await held(); // the first put is in flight
    w.remove(stream, policy('db-from-web', 5432), '2');
    release();
    open();
    await w.idle();
    assert.deepEqual(await names(root), []);
  });
});
