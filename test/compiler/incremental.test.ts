/**
 * Incremental ≡ full: random event sequences, applied one by one, in batches, in shuffled order
 * and with a resync in the middle, end in exactly the tables (and renderer cache state) that a
 * fresh full compile of the final snapshot gives. And an unrelated change touches nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { stateGroupLookup } from '../../src/configurator/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import { PolicyPipeline, type PipelineChange } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { RendererCache, type CacheChanges } from '../../src/datapaths/cache/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { changesBetween, mixObjects, upsertsOf } from '../helpers/events.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function makePipeline(): { pipeline: PolicyPipeline; cache: RendererCache } {
  const state = new ClusterState();
  const cache = new RendererCache({ side: 'ingress', groups: stateGroupLookup(state) });
  return { pipeline: new PolicyPipeline({ state, renderers: [cache] }), cache };
}

/** Everything observable about a compiled state, as plain data. */
function fingerprint(pipeline: PolicyPipeline, cache: RendererCache): object {
  const tables = Object.fromEntries(
    [...pipeline.compiledPods()]
      .map(([id, t]): [string, string[]] => [
        id,
        [t.ingress?.id ?? '-', t.egress?.id ?? '-', t.ingressTiers?.id ?? '-', t.egressTiers?.id ?? '-'],
      ])
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const bindings = Object.fromEntries([...cache.snapshot.binding].sort(([a], [b]) => (a < b ? -1 : 1)));
  return {
    tables,
    bindings,
    global: cache.snapshot.global.id,
    groups: [...pipeline.state.groupKeys()].sort(),
  };
}

function full(cluster: Cluster): object {
  const { pipeline, cache } = makePipeline();
  pipeline.apply({ type: 'resync', cluster });
  return fingerprint(pipeline, cache);
}

const shuffled = <T>(items: readonly T[]) =>
  fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });

describe('incremental ≡ full compile', () => {
  it('one event at a time, in any order, from one random cluster to a variation of it (tiered policies and nodes too)', () => {
    fc.assert(
      fc.property(
        fc
          .tuple(
            clusterArb({ maxPods: 7, maxClusterPolicies: 3 }),
            clusterArb({ maxPods: 7, maxClusterPolicies: 3 }),
            fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 20 }),
          )
          .chain(([a, other, picks]) => {
            const [ca, cb] = [clusterOf(a), clusterOf(mixObjects(a, other, picks))];
            return fc.tuple(fc.constant(cb), shuffled(upsertsOf(ca)), shuffled(changesBetween(ca, cb)));
          }),
        ([target, build, transform]) => {
          const { pipeline, cache } = makePipeline();
          for (const change of [...build, ...transform]) pipeline.apply(change);
          assert.deepEqual(fingerprint(pipeline, cache), full(target));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('in batches, and with a resync of another snapshot in the middle', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxClusterPolicies: 3 }),
        clusterArb({ maxPods: 7, maxClusterPolicies: 3 }),
        clusterArb({ maxPods: 7, maxClusterPolicies: 3 }),
        fc.integer({ min: 1, max: 5 }),
        (a, b, c, batch) => {
          const [ca, cb, cc] = [clusterOf(a), clusterOf(b), clusterOf(c)];
          const { pipeline, cache } = makePipeline();
          const changes: PipelineChange[] = [
            ...upsertsOf(ca),
            { type: 'resync', cluster: cb },
            ...changesBetween(cb, cc),
          ];
          for (let i = 0; i < changes.length; i += batch) pipeline.applyBatch(changes.slice(i, i + batch));
          assert.deepEqual(fingerprint(pipeline, cache), full(cc));
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("a node's own permits", () => {
  it("a node's new address reaches the ordered lists of its pods (Calico's or Cilium's policies in NetworkPolicy's tier)", () => {
    // The lists permit the pod's own node by address (tier-lists.ts withNodePermits): when the
    // node's address changed, only the subjects of policies with nodes peers were compiled again,
    // and this pod kept a permit for the address its node no longer has.
    const node = (ip: string): Raw => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      status: { addresses: [{ type: 'InternalIP', address: ip }] },
    });
    const objects = (ip: string): Raw[] => [
      namespace('a'),
      namespace('b'),
      pod('a', 'api', { app: 'api' }, { ips: ['10.0.0.1'], node: 'n1' }),
      node(ip),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'no-b', namespace: 'a' },
        spec: {
          endpointSelector: { matchLabels: { app: 'api' } },
          egressDeny: [{ toEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'b' } }] }],
        },
      },
    ];
    const { pipeline, cache } = makePipeline();
    pipeline.apply({ type: 'resync', cluster: clusterOf(objects('192.168.100.1')) });
    const moved = clusterOf(objects('192.168.100.3')).nodes.get('n1');
    assert.ok(moved);
    pipeline.apply({ type: 'upsert-node', node: moved });
    assert.deepEqual(fingerprint(pipeline, cache), full(clusterOf(objects('192.168.100.3'))));
  });
});

describe('minimal changes', () => {
  const base = [
    namespace('shop'),
    namespace('other'),
    pod('shop', 'web', { app: 'web' }, { ips: ['10.0.0.1'] }),
    pod('shop', 'db', { app: 'db' }, { ips: ['10.0.0.2'] }),
    pod('other', 'x', { app: 'x' }, { ips: ['10.0.1.1'] }),
    policy('shop', 'db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
    }),
  ];
  it('a change that keeps labels, addresses and ports affects nothing', () => {
    const { pipeline } = makePipeline();
    const cluster = clusterOf(base);
    pipeline.apply({ type: 'resync', cluster });
    const x = cluster.endpoints.find((e) => e.id === 'other/x');
    assert.ok(x);
    const result = pipeline.apply({ type: 'upsert-pod', pod: { ...x } });
    assert.equal(result.affected, 0);
    const changes = result.changes.get('cache') as CacheChanges;
    assert.deepEqual(
      [changes.addedTables.length, changes.removedTables.length, changes.rebound.length, changes.global],
      [0, 0, 0, undefined],
    );
  });
  it('a label change of a pod no policy references recompiles only that pod and touches no table', () => {
    const { pipeline } = makePipeline();
    const cluster = clusterOf(base);
    pipeline.apply({ type: 'resync', cluster });
    const x = cluster.endpoints.find((e) => e.id === 'other/x');
    assert.ok(x);
    const result = pipeline.apply({ type: 'upsert-pod', pod: { ...x, labels: { app: 'y' } } });
    assert.equal(result.affected, 1);
    const changes = result.changes.get('cache') as CacheChanges;
    assert.deepEqual(
      [changes.addedTables.length, changes.removedTables.length, changes.rebound.length],
      [0, 0, 0],
    );
  });
  it('a pod joining a peer group recompiles only itself; renderers get the group update', () => {
    const groupUpdates: string[][] = [];
    const recorder = {
      name: 'recorder',
      reads: 'tables' as const,
      newTxn: () => ({
        render: () => undefined,
        groupsChanged: (g: ReadonlySet<string>) => void groupUpdates.push([...g]),
        changes: () => undefined,
        commit: () => undefined,
      }),
    };
    const pipeline = new PolicyPipeline({ renderers: [recorder] });
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    const dbTable = pipeline.tablesOf('shop/db')?.ingress;
    const web2 = clusterOf([pod('shop', 'web2', { app: 'web' }, { ips: ['10.0.0.3'] })]).endpoints[0];
    assert.ok(web2);
    const result = pipeline.apply({ type: 'upsert-pod', pod: web2 });
    assert.equal(
      result.affected,
      1,
      'only the new pod: shop/db references the web group, whose rules do not change',
    );
    assert.equal(pipeline.tablesOf('shop/db')?.ingress, dbTable);
    assert.deepEqual(groupUpdates.at(-1), ['ns=shop;pod=app=web']);
  });
  it('a new named-port number recompiles the pods whose egress rules list the numbers', () => {
    const objects = [
      namespace('a'),
      pod('a', 'client', { app: 'client' }, { ips: ['10.0.0.1'] }),
      pod(
        'a',
        'server1',
        { app: 'server' },
        { ips: ['10.0.0.2'], ports: [{ name: 'http', containerPort: 80 }] },
      ),
      policy('a', 'out', {
        podSelector: { matchLabels: { app: 'client' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ podSelector: { matchLabels: { app: 'server' } } }], ports: [{ port: 'http' }] }],
      }),
    ];
    const pipeline = new PolicyPipeline();
    pipeline.apply({ type: 'resync', cluster: clusterOf(objects) });
    const before = pipeline.tablesOf('a/client')?.egress;
    const sameNumber = clusterOf([
      pod(
        'a',
        'server2',
        { app: 'server' },
        { ips: ['10.0.0.3'], ports: [{ name: 'http', containerPort: 80 }] },
      ),
    ]).endpoints[0];
    const newNumber = clusterOf([
      pod(
        'a',
        'server3',
        { app: 'server' },
        { ips: ['10.0.0.4'], ports: [{ name: 'http', containerPort: 8080 }] },
      ),
    ]).endpoints[0];
    assert.ok(sameNumber && newNumber);
    assert.equal(pipeline.apply({ type: 'upsert-pod', pod: sameNumber }).affected, 1);
    assert.equal(pipeline.tablesOf('a/client')?.egress, before);
    assert.equal(
      pipeline.apply({ type: 'upsert-pod', pod: newNumber }).affected,
      2,
      'the new pod and the client',
    );
    assert.notEqual(pipeline.tablesOf('a/client')?.egress?.id, before?.id);
    assert.equal(
      pipeline.tablesOf('a/client')?.egress?.rules.length,
      3,
      'permit to partition 80, to partition 8080, deny the rest',
    );
  });
});
