/**
 * Property: after any history of adds, updates (labels, addresses, status churn) and deletes of
 * namespaces, pods and policies — interleaved with forced 410s (watch cut, history compacted),
 * watches dropped mid-line, reflector restarts and leader changes (the leader dropped with its
 * pending writes unsent, a standby taking over) — etcd holds exactly the reduced value of every
 * object the cluster holds, and nothing else. Bounded by default; PALISADE_PROPERTY_RUNS raises it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { connectEtcd, type EtcdStore } from '../../src/etcd/index.ts';
import { type Reflector } from '../../src/reflector/index.ts';
import { KeyLayout } from '../../src/reflected/index.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { tempDir } from '../fake-apiserver/fixtures.ts';
import { needsEtcd, suiteEtcd } from './etcd-fixture.ts';
import { apiReflector, converged, until } from './reflector-helpers.ts';

type Step =
  | { op: 'pod'; ns: string; name: string; app: string; ip: number }
  | { op: 'churn'; ns: string; name: string; n: number }
  | { op: 'deletePod'; ns: string; name: string }
  | { op: 'policy'; ns: string; name: string; app: string }
  | { op: 'deletePolicy'; ns: string; name: string }
  | { op: 'namespace'; ns: string; team: string }
  | { op: 'deleteNamespace'; ns: string }
  | { op: 'burst'; seed: number }
  | { op: 'restart' | 'leaderChange'; afterMs: number }
  | { op: 'gone' | 'drop' | 'pause' };

const ns = fc.constantFrom('a', 'b', 'c');
const name = fc.constantFrom('p0', 'p1', 'p2', 'p3', 'p4');
const app = fc.constantFrom('web', 'db', 'api');
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('pod' as const),
      ns,
      name,
      app,
      ip: fc.integer({ min: 1, max: 250 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('churn' as const), ns, name, n: fc.nat(100) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('deletePod' as const), ns, name }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('policy' as const), ns, name, app }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deletePolicy' as const), ns, name }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('namespace' as const), ns, team: app }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteNamespace' as const), ns }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('burst' as const), seed: fc.nat(1000) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constantFrom('gone' as const, 'drop' as const, 'pause' as const) }),
  },
  // The leader goes away after a random moment: between, during or after its transactions.
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('restart' as const, 'leaderChange' as const),
      afterMs: fc.nat(12),
    }),
  },
);

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 4);

describe('reflected etcd ≡ cluster after random histories', { skip: needsEtcd }, () => {
  const etcd = suiteEtcd();
  const temp = tempDir('reflector-property');
  after(() => temp.cleanup());
  let run = 0;

  it('holds across 410s, dropped watches, restarts and leader changes', { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 30 }), async (steps) => {
        const keys = new KeyLayout(`/prop-${process.pid}-${run++}`);
        const server = new FakeApiServer();
        await server.start();
        const stores: EtcdStore[] = [];
        const reflectors: {
          reflector: Reflector;
          running: Promise<unknown>;
          store: EtcdStore;
          id: string;
        }[] = [];
        let next = 0;
        const start = async (): Promise<void> => {
          const store = await connectEtcd({ endpoints: [etcd.server.endpoint] });
          stores.push(store);
          const id = `r${next++}`;
          const log: string[] = [];
          // Small transactions, so a burst spans several and a restart can fall between them.
          const started = await apiReflector(server, store, temp.dir, { id, layout: keys, log, maxOps: 4 });
          reflectors.push({ ...started, store, id });
        };
        try {
          await start();
          await start(); // a standby
          for (const s of steps) {
            apply(server, s);
            if (s.op === 'gone') {
              server.dropWatches();
              server.store.compact();
            } else if (s.op === 'drop') {
              server.dropWatches({ midLine: true });
            } else if (s.op === 'restart' || s.op === 'leaderChange') {
              // The leader (whoever holds the key) goes away with its pending writes unsent.
              await new Promise((r) => setTimeout(r, s.afterMs));
              const leader = await etcd.store.get(keys.leader);
              const index = reflectors.findIndex((r) => r.id === leader?.value);
              const victim = index >= 0 ? reflectors.splice(index, 1)[0]! : reflectors.shift()!;
              victim.reflector.stop({ now: true });
              await victim.running;
              if (s.op === 'restart' || reflectors.length === 0) await start();
              if (reflectors.length < 2) await start();
            } else if (s.op === 'pause') {
              await new Promise((r) => setTimeout(r, 30));
            }
          }
          const { store } = etcd;
          await converged(server, store, 20_000, keys);
          // One of the running reflectors leads at the end.
          await until(async () => {
            const leader = await store.get(keys.leader);
            return leader !== undefined && reflectors.some((r) => r.id === leader.value);
          });
          assert.ok(true);
        } finally {
          for (const r of reflectors) r.reflector.stop();
          await Promise.all(reflectors.map((r) => r.running.catch(() => undefined)));
          for (const s of stores) s.close();
          await server.stop();
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
  });
});

function apply(server: FakeApiServer, s: Step): void {
  const store = server.store;
  switch (s.op) {
    case 'pod':
      store.apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: s.name, namespace: s.ns, labels: { app: s.app } },
        spec: { nodeName: 'n1', containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80 }] }] },
        status: { phase: 'Running', podIP: `10.1.0.${s.ip}` },
      });
      return;
    case 'churn': {
      const current = store.get(store.resourceFor('Pod'), s.ns, s.name);
      if (!current) return;
      const object = JSON.parse(current.itemJson) as { status: Record<string, unknown> };
      object.status.conditions = [{ type: 'Ready', status: s.n % 2 ? 'True' : 'False' }];
      store.apply({ apiVersion: 'v1', kind: 'Pod', ...object });
      return;
    }
    case 'deletePod':
      store.remove('Pod', s.ns, s.name);
      return;
    case 'burst':
      // Many changes at once: every pod of every namespace relabelled.
      for (const namespace of ['a', 'b', 'c'])
        for (let i = 0; i < 5; i++)
          apply(server, {
            op: 'pod',
            ns: namespace,
            name: `p${i}`,
            app: `v${(s.seed + i) % 7}`,
            ip: 1 + ((s.seed + i) % 250),
          });
      return;
    case 'policy':
      store.apply({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: s.name, namespace: s.ns },
        spec: { podSelector: { matchLabels: { app: s.app } }, policyTypes: ['Ingress'] },
      });
      return;
    case 'deletePolicy':
      store.remove('NetworkPolicy', s.ns, s.name);
      return;
    case 'namespace':
      store.apply({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: s.ns, labels: { team: s.team } },
      });
      return;
    case 'deleteNamespace':
      store.remove('Namespace', undefined, s.ns);
      return;
    default:
      return;
  }
}
