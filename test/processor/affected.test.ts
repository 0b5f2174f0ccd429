/**
 * The processor on its own: from one change to the store, exactly the pods whose tables may be
 * stale — no fewer (a stale table is a wrong verdict in the datapath) and, where the design says
 * so, no more (a pod joining a group reaches renderers as a group update, not as recompiled
 * tables). The last test holds "no fewer" on random histories: every pod whose compiled tables
 * differ after a change is in the affected set.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Configurator } from '../../src/configurator/index.ts';
import type { Cluster, Endpoint, NetworkPolicy, NodeInfo } from '../../src/model/types.ts';
import { changesBetween } from '../../src/pipeline/index.ts';
import { affectedPods, sameShape } from '../../src/processor/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, endpoint, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { applyChange } from '../helpers/store.ts';

const RUNS = propertyRuns(60);

const SHOP: Raw[] = [
  namespace('shop', { team: 'shop' }),
  namespace('ops', { team: 'ops' }),
  pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.1'], node: 'n1' }),
  pod(
    'shop',
    'db',
    { app: 'db' },
    { ips: ['10.0.0.2'], node: 'n2', ports: [{ name: 'sql', containerPort: 5432 }] },
  ),
  pod('ops', 'probe', { app: 'probe' }, { ips: ['10.0.1.1'], node: 'n1' }),
  policy('shop', 'db-in', {
    podSelector: { matchLabels: { app: 'db' } },
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }],
  }),
  policy('shop', 'api-out', {
    podSelector: { matchLabels: { app: 'api' } },
    policyTypes: ['Egress'],
    egress: [{ to: [{ podSelector: {} }], ports: [{ port: 'sql' }] }],
  }),
];

const anp = (name: string, spec: Raw): Raw => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'AdminNetworkPolicy',
  metadata: { name },
  spec: { priority: 1, ...spec },
});
const node = (name: string, ip: string, labels: Record<string, string>): Raw => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
});

function setup(extra: readonly Raw[] = []): { cluster: Cluster; store: ClusterState } {
  const cluster = clusterOf([...SHOP, ...extra]);
  const store = new ClusterState();
  store.resync(cluster);
  return { cluster, store };
}

const sorted = (ids: Iterable<string>): string[] => [...ids].sort();

describe('the processor (affectedPods) on its own', () => {
  it('a pod whose policy-relevant fields stayed the same affects nothing', () => {
    const { cluster, store } = setup();
    const api = endpoint(cluster, 'shop/api');
    const delta = store.upsertPod({ ...api, workload: { kind: 'Deployment', name: 'api' } });
    assert.deepEqual(sorted(affectedPods(store, delta)), []);
  });

  it('a relabelled pod is stale itself; pods whose peers select it only hear of the group', () => {
    const { cluster, store } = setup();
    const api = endpoint(cluster, 'shop/api');
    const delta = store.upsertPod({ ...api, labels: { app: 'web' } });
    // db's ingress names api through a group (app=api), which api leaves: db's tables do not
    // change, the group's members do. api itself is stale (api-out no longer selects it).
    assert.deepEqual(sorted(affectedPods(store, delta)), ['shop/api']);
    assert.ok(delta.members.has('shop/api'));
  });

  it('a named port resolving to another number makes the policies that name it stale', () => {
    const { cluster, store } = setup();
    const db = endpoint(cluster, 'shop/db');
    const delta = store.upsertPod({ ...db, ports: [{ name: 'sql', port: 3306, protocol: 'TCP' }] });
    // api's egress lists one rule per number the name resolves to.
    assert.deepEqual(sorted(affectedPods(store, delta)), ['shop/api', 'shop/db']);
  });

  it('a policy change affects the pods it selected before and those it selects after', () => {
    const { store } = setup();
    const moved = clusterOf([
      policy('shop', 'db-in', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }],
      }),
    ]).policies[0] as NetworkPolicy;
    assert.deepEqual(sorted(affectedPods(store, store.upsertPolicy(moved))), ['shop/api', 'shop/db']);
    assert.deepEqual(sorted(affectedPods(store, store.deletePolicy('shop/db-in'))), ['shop/api']);
  });

  it('a deleted pod is affected (its tables go); a namespace relabel without cluster policy is not', () => {
    const { store } = setup();
    assert.deepEqual(sorted(affectedPods(store, store.deletePod('ops/probe'))), ['ops/probe']);
    // db exposes the named port `sql` that api-out's egress resolves: the number goes from api's rules.
    assert.deepEqual(sorted(affectedPods(store, store.deletePod('shop/db'))), ['shop/api', 'shop/db']);
    const relabelled = clusterOf([namespace('ops', { team: 'none' })]).namespaces.get('ops');
    assert.ok(relabelled);
    assert.deepEqual(sorted(affectedPods(store, store.upsertNamespace(relabelled))), []);
  });

  it('with cluster policy: a namespace relabel affects its pods, a node change the subjects of nodes peers', () => {
    const { store } = setup([
      node('n1', '192.168.0.1', { zone: 'a' }),
      anp('ops-to-nodes', {
        subject: { namespaces: { matchLabels: { team: 'ops' } } },
        egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { zone: 'a' } } }] }],
      }),
    ]);
    const relabelled = clusterOf([namespace('shop', { team: 'other' })]).namespaces.get('shop');
    assert.ok(relabelled);
    assert.deepEqual(sorted(affectedPods(store, store.upsertNamespace(relabelled))), ['shop/api', 'shop/db']);
    const moved = clusterOf([node('n1', '192.168.0.9', { zone: 'a' })]).nodes.get('n1') as NodeInfo;
    assert.deepEqual(sorted(affectedPods(store, store.upsertNode(moved))), ['ops/probe']);
  });

  it("a host-network pod's addresses are a node's: their change affects the subjects of outside peers", () => {
    const cidrPolicy: Raw = {
      apiVersion: 'cilium.io/v2',
      kind: 'CiliumNetworkPolicy',
      metadata: { name: 'db-from-lan', namespace: 'shop' },
      spec: { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{ fromCIDR: ['192.168.0.0/16'] }] },
    };
    const { store } = setup([cidrPolicy]);
    const tables = (): string | undefined => {
      const db = [...store.allPods()].find((p) => p.id === 'shop/db') as Endpoint;
      const t = new Configurator(store).compile(db);
      return [t.ingress?.id, t.ingressTiers?.id].join(' ');
    };
    const before = tables();
    const agent = (ip: string): Endpoint =>
      clusterOf([namespace('ops'), pod('ops', 'agent', {}, { ips: [ip], hostNetwork: true })])
        .endpoints[0] as Endpoint;
    assert.deepEqual(sorted(affectedPods(store, store.upsertPod(agent('192.168.1.77')))), [
      'ops/agent',
      'shop/db',
    ]);
    assert.notEqual(tables(), before, "the agent's address is cut out of the block");
    assert.deepEqual(sorted(affectedPods(store, store.upsertPod(agent('192.168.1.77')))), []);
    assert.deepEqual(sorted(affectedPods(store, store.deletePod('ops/agent'))), ['ops/agent', 'shop/db']);
    assert.equal(tables(), before);
    // The usual host-network pod has its node's address: it moves no cut, and affects only itself.
    store.upsertNode(clusterOf([node('n1', '192.168.1.10', {})]).nodes.get('n1') as NodeInfo);
    const version = store.nodesVersion;
    const onNode = agent('192.168.1.10');
    assert.deepEqual(sorted(affectedPods(store, store.upsertPod(onNode))), ['ops/agent']);
    assert.deepEqual(sorted(affectedPods(store, store.upsertPod({ ...onNode, labels: { app: 'x' } }))), [
      'ops/agent',
    ]);
    assert.equal(store.nodesVersion, version, 'no new version of the nodes');
  });

  it('a resync affects every pod, and the pods it removed', () => {
    const { cluster, store } = setup();
    const delta = store.resync({
      ...cluster,
      endpoints: cluster.endpoints.filter((e) => e.id !== 'ops/probe'),
    });
    assert.deepEqual(sorted(affectedPods(store, delta)), ['ops/probe', 'shop/api', 'shop/db']);
  });

  it('sameShape tells apart each field policy reads, and nothing else', () => {
    const { cluster } = setup();
    const db = endpoint(cluster, 'shop/db');
    assert.ok(sameShape(db, { ...db, labels: { ...db.labels } }));
    const variants: Partial<Endpoint>[] = [
      { namespace: 'ops' },
      { hostNetwork: true },
      { node: 'n9' },
      { labels: { app: 'db', extra: '' } },
      { labels: {} },
      { ips: [] },
      { ips: endpoint(cluster, 'shop/api').ips },
      { ports: [] },
      { ports: [{ name: 'sql', port: 5432, protocol: 'UDP' }] },
      { ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }] },
    ];
    for (const variant of variants)
      assert.equal(sameShape(db, { ...db, ...variant }), false, Object.keys(variant).join());
  });

  it('misses no pod whose compiled tables change, on random histories', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }),
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }),
        (first, second) => {
          const a = clusterOf(first);
          const b = clusterOf(second);
          const store = new ClusterState();
          store.resync(a);
          // A fresh configurator per look: no memo carried over, tables compared by their ids.
          const tablesOf = (pod: Endpoint): string => {
            const t = new Configurator(store).compile(pod);
            return [t.ingress?.id, t.egress?.id, t.ingressTiers?.id, t.egressTiers?.id].join(' ');
          };
          let previous = new Map([...store.allPods()].map((p) => [p.id, tablesOf(p)]));
          for (const change of changesBetween(a, b)) {
            const affected = affectedPods(store, applyChange(store, change));
            const now = new Map([...store.allPods()].map((p) => [p.id, tablesOf(p)]));
            for (const [id, tables] of now)
              if (previous.get(id) !== tables)
                assert.ok(affected.has(id), `${id}'s tables changed after ${change.type}, not reported`);
            for (const id of previous.keys())
              if (!now.has(id)) assert.ok(affected.has(id), `${id} went after ${change.type}, not reported`);
            previous = now;
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
