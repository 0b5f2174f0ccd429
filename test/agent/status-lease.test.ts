/**
 * The status lease on a stalled start: a lease that expires between its grant and its first use
 * (a node stalled for longer than the TTL) is granted again, not thrown out of the agent's start.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, type EtcdStore } from '../../src/etcd/index.ts';
import { StatusLease } from '../../src/agent/status-lease.ts';
import type { StatusRecord } from '../../src/agent/types.ts';

/** A store whose first `expired` writes under a lease fail as etcd answers for an expired lease. */
function expiringStore(expired: number): { store: EtcdStore; granted: () => number } {
  const inner = new MemoryStore();
  let grants = 0;
  let failures = expired;
  const store = Object.create(inner) as EtcdStore;
  Object.assign(store, {
    grantLease: (ttl: number) => (grants++, inner.grantLease(ttl)),
    txn: (compares: Parameters<EtcdStore['txn']>[0], ops: Parameters<EtcdStore['txn']>[1]) => {
      if (failures > 0 && ops.some((op) => op.type === 'put' && op.lease !== undefined)) {
        failures--;
        return Promise.reject(new Error('etcdserver: requested lease not found'));
      }
      return inner.txn(compares, ops);
    },
  });
  return { store, granted: () => grants };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const lease = (store: EtcdStore) =>
  new StatusLease({
    store,
    key: '/status/n1',
    ttlSeconds: 2,
    intervalMs: 50,
    log: silent,
    record: () => ({ node: 'n1' }) as unknown as StatusRecord,
    onContact() {},
  });

describe('the status lease', () => {
  it('grants another lease when the first expired before its first write', async () => {
    const { store, granted } = expiringStore(2);
    const status = lease(store);
    await status.grant();
    assert.equal(granted(), 3, 'two expired leases, then one that held');
    assert.equal((await store.range('/status/n1')).kvs.length, 1, 'the status key is written');
    await status.stop();
  });

  it('gives up after five leases expire in a row, with the error', async () => {
    const { store } = expiringStore(10);
    const status = lease(store);
    await assert.rejects(status.grant(), /requested lease not found/);
    await status.stop();
  });
});
