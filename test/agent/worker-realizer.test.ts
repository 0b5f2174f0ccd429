/**
 * The realizer in a worker thread (agent/worker-realizer.ts ↔ realizer-worker.ts), as the agent
 * drives it: a listing realized as the first snapshot, a change after it, a verification, and a
 * whole listing of 20,000 keys handed over in chunks. A worker that dies fails the call with a
 * request for a listing, and the next worker is started, opened and brought back by that listing.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { realizerWorkerScript, WorkerRealizer } from '../../src/agent/worker-realizer.ts';
import type { RealizerWorkerData } from '../../src/agent/worker-protocol.ts';
import type { KeyChange } from '../../src/agent/mirror.ts';
import { encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { pod, smallCluster } from './helpers.ts';
import type { Raw } from '../helpers/builders.ts';

const layout = new KeyLayout('/w');
const data: RealizerWorkerData = {
  datapath: 'classifier',
  prefix: '/w',
  etcd: { endpoints: [] },
  context: { node: 'n1', podCidrs: [], allowNodeLocal: true },
};
let revision = 1;
const puts = (objects: readonly Raw[]): KeyChange[] =>
  objects.map((o) => {
    const encoded = encodeObject(layout, o, 'test');
    return { key: encoded.key, value: encoded.value!, modRevision: revision++ };
  });

describe('the realizer in a worker thread', () => {
  const temp = mkdtempSync(join(tmpdir(), 'palisade-worker-'));
  after(() => rmSync(temp, { recursive: true, force: true }));

  it('realizes a listing, then changes, verifies, and takes 20,000 keys in chunks', async () => {
    const script = realizerWorkerScript();
    assert.ok(script, 'the worker module is beside the agent');
    const realizer = new WorkerRealizer(script, data);
    try {
      assert.match(await realizer.prepare(), /classifier/);
      const first = await realizer.realize(puts(smallCluster()), true);
      assert.equal(first.first, true);
      assert.ok(first.counts.tables > 0);
      const next = await realizer.realize(
        puts([pod('shop', 'web-9', '10.1.0.9', 'n1', { app: 'web' })]),
        false,
      );
      assert.equal(next.first, false);
      assert.deepEqual(await realizer.reconcile(), []);
      const many = puts(
        Array.from({ length: 20_000 }, (_, i) =>
          pod('shop', `x-${i}`, `10.9.${i >> 8}.${i & 255}`, 'n2', { app: 'x' }),
        ),
      );
      const big = await realizer.realize(many, false);
      assert.equal(big.unreadableCount, 0);
    } finally {
      await realizer.close();
    }
  });

  it('a worker that dies asks for a listing, and the next one is brought back by it', async () => {
    process.env.PALISADE_TEST_CRASH_MARKER = join(temp, 'crashed');
    const script = fileURLToPath(new URL('./fixtures/crashing-realizer-worker.ts', import.meta.url));
    const realizer = new WorkerRealizer(script, data);
    try {
      await realizer.prepare();
      const listing = puts(smallCluster());
      await assert.rejects(realizer.realize(listing, true), (error: Error & { relist?: boolean }) => {
        assert.match(error.message, /the realizer worker stopped \(exit code 3\)/);
        assert.equal(error.relist, true);
        return true;
      });
      // The next call starts a new worker; without a listing it asks for one.
      await assert.rejects(realizer.realize([], false), /needs a whole listing/);
      const again = await realizer.realize(listing, true);
      assert.equal(again.first, true);
      assert.ok(again.counts.tables > 0);
    } finally {
      delete process.env.PALISADE_TEST_CRASH_MARKER;
      await realizer.close();
    }
  });
});
