/**
 * The store on its own (no configurator, no renderer): what each change reports in its delta
 * (groups, named-port partitions, members, the pods a policy selected before), the indexes it
 * answers from (selection, podsSelectedBy, groups and who uses them, implicit namespaces), and
 * the property that matters most — a store kept current change by change answers every lookup
 * exactly as a store built from the final snapshot does, and so does a resync from any state.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster, Endpoint, NetworkPolicy } from '../../src/model/types.ts';
import { policyKey } from '../../src/model/types.ts';
import { changesBetween } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, endpoint, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { applyChange, observe } from '../helpers/store.ts';

const RUNS = propertyRuns(100);

function storeOf(cluster: Cluster): ClusterState {
  const store = new ClusterState();
  store.resync(cluster);
  return store;
}

/** A small shop: api and db in `shop`, a client elsewhere, db reachable from api on a named port. */
function shop(extra: readonly Raw[] = []): Raw[] {
  return [
    namespace('shop', { team: 'shop' }),
    namespace('other', { team: 'other' }),
    pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.1'] }),
    pod('shop', 'db', { app: 'db' }, { ips: ['10.0.0.2'], ports: [{ name: 'sql', containerPort: 5432 }] }),
    pod('other', 'client', { app: 'client' }, { ips: ['10.0.1.1'] }),
    policy('shop', 'db-in', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }],
    }),
    policy('shop', 'api-out', {
      podSelector: { matchLabels: { app: 'api' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ podSelector: {} }], ports: [{ port: 'sql' }] }],
    }),
    ...extra,
  ];
}

describe('the store (state/) on its own', () => {
  it('answers selection, selected pods and group members from its indexes', () => {
    const cluster = clusterOf(shop());
    const store = storeOf(cluster);
    const db = endpoint(cluster, 'shop/db');
    const api = endpoint(cluster, 'shop/api');
    assert.deepEqual(policyKey(store.selection(db).ingress[0] as NetworkPolicy), 'shop/db-in');
    assert.equal(store.selection(db).egress.length, 0);
    assert.deepEqual(store.selection(api).egress.map(policyKey), ['shop/api-out']);
    const dbIn = store.policy('shop/db-in') as NetworkPolicy;
    assert.deepEqual(store.podsSelectedBy(dbIn), ['shop/db']);
    const groups = store.groupsOfPolicy('shop/db-in');
    assert.equal(groups.length, 1);
    const group = store.group(groups[0] as string);
    assert.deepEqual([...(group?.members.keys() ?? [])], ['shop/api']);
    assert.ok(group?.contains(api.ips[0] as Endpoint['ips'][number]));
    assert.deepEqual([...store.policiesOfGroup(groups[0] as string)], ['shop/db-in']);
    // The named-port group: only pods exposing `sql`, partitioned by its number.
    const named = store.groupsOfPolicy('shop/api-out').map((key) => store.group(key));
    assert.deepEqual(
      named.map((g) => [[...(g?.members.keys() ?? [])], [...(g?.ports ?? [])]]),
      [[['shop/db'], [[5432, 1]]]],
    );
  });

  it('shares one selection between pods of one label set, and a new one after a policy changes', () => {
    const cluster = clusterOf(shop([pod('shop', 'db2', { app: 'db' }, { ips: ['10.0.0.3'] })]));
    const store = storeOf(cluster);
    const first = store.selection(endpoint(cluster, 'shop/db'));
    assert.equal(store.selection(endpoint(cluster, 'shop/db2')), first);
    const changed = clusterOf([
      policy('shop', 'db-in', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{}] }),
    ]).policies[0] as NetworkPolicy;
    store.upsertPolicy(changed);
    const second = store.selection(endpoint(cluster, 'shop/db'));
    assert.notEqual(second.ingressKey, first.ingressKey);
    assert.equal(second.ingress[0], changed);
  });

  it('without cluster policy, gives every pod side one empty tier plan, and a selected one once there is some', () => {
    const cluster = clusterOf(shop());
    const store = storeOf(cluster);
    const api = endpoint(cluster, 'shop/api');
    const empty = store.planSelection(api, 'ingress');
    // One object for every pod side, whatever its namespace, labels or direction: a plan kept
    // per namespace and label set held 57 MB at shape (a) ×1.
    assert.equal(store.planSelection(endpoint(cluster, 'other/client'), 'egress'), empty);
    assert.ok(empty.selections.every((s) => s.policies.length === 0));
    const admin = clusterOf([
      {
        apiVersion: 'policy.networking.k8s.io/v1alpha1',
        kind: 'AdminNetworkPolicy',
        metadata: { name: 'shop-in' },
        spec: {
          priority: 1,
          subject: { namespaces: { matchLabels: { team: 'shop' } } },
          ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
        },
      },
    ]).clusterPolicies[0];
    assert.ok(admin);
    store.upsertClusterPolicy(admin);
    const selected = store.planSelection(api, 'ingress');
    assert.notEqual(selected, empty);
    assert.deepEqual(
      selected.selections.flatMap((s) => s.policies.map((p) => p.name)),
      ['shop-in'],
    );
    assert.ok(
      store
        .planSelection(endpoint(cluster, 'other/client'), 'ingress')
        .selections.every((s) => s.policies.length === 0),
    );
  });

  it('reports in a pod change the groups it joined and left, and itself as a moved member', () => {
    const cluster = clusterOf(shop());
    const store = storeOf(cluster);
    const apiGroup = store.groupsOfPolicy('shop/db-in')[0] as string;
    const api = endpoint(cluster, 'shop/api');
    const relabelled: Endpoint = { ...api, labels: { app: 'web' } };
    const left = store.upsertPod(relabelled);
    assert.ok(left.groups.has(apiGroup), 'left the group of app=api');
    assert.ok(left.members.has('shop/api'));
    assert.equal(left.resync, false);
    assert.deepEqual(left.pods, [{ before: api, after: relabelled }]);
    assert.equal(store.group(apiGroup)?.members.size, 0);
    const back = store.upsertPod(api);
    assert.ok(back.groups.has(apiGroup), 'joined it again');
    assert.ok(back.revision > left.revision);
    // A change nobody's group sees: no group, no member.
    const client = endpoint(cluster, 'other/client');
    const quiet = store.upsertPod({ ...client, labels: { app: 'client', tier: 'x' } });
    assert.equal(quiet.groups.size, 0);
    assert.equal(quiet.members.size, 0);
  });

  it('reports a named-port partition only when the set of numbers changes', () => {
    const cluster = clusterOf(shop());
    const store = storeOf(cluster);
    const named = store.groupsOfPolicy('shop/api-out')[0] as string;
    const db = endpoint(cluster, 'shop/db');
    const same = store.upsertPod({ ...db, labels: { app: 'db', v: '2' } });
    assert.ok(!same.partitions.has(named), 'same number: members only');
    const moved = store.upsertPod({ ...db, ports: [{ name: 'sql', port: 3306, protocol: 'TCP' }] });
    assert.ok(moved.partitions.has(named), 'the name now resolves to another number');
    assert.deepEqual([...(store.group(named)?.ports ?? [])], [[3306, 1]]);
    const gone = store.deletePod('shop/db');
    assert.ok(gone.partitions.has(named));
    assert.equal(store.group(named)?.ports.size, 0);
  });

  it('gives a policy change the pods its previous version selected', () => {
    const cluster = clusterOf(shop());
    const store = storeOf(cluster);
    const widened = clusterOf([
      policy('shop', 'db-in', {
        podSelector: {},
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }],
      }),
    ]).policies[0] as NetworkPolicy;
    const delta = store.upsertPolicy(widened);
    assert.deepEqual(delta.policies[0]?.selectedBefore, ['shop/db']);
    assert.deepEqual(store.podsSelectedBy(widened).sort(), ['shop/api', 'shop/db']);
    const deleted = store.deletePolicy('shop/db-in');
    assert.deepEqual([...(deleted.policies[0]?.selectedBefore ?? [])].sort(), ['shop/api', 'shop/db']);
    assert.equal(store.groupsOfPolicy('shop/db-in').length, 0);
    assert.equal(
      store.deletePolicy('shop/db-in').policies.length,
      0,
      'deleting what is gone touches nothing',
    );
  });

  it('keeps an undefined namespace implicitly, with only its name label, while something uses it', () => {
    const store = new ClusterState();
    const cluster = clusterOf([pod('ghost', 'p', { app: 'x' }, { ips: ['10.0.2.1'] })]);
    store.upsertPod(endpoint(cluster, 'ghost/p'));
    assert.deepEqual(store.namespaceLabels('ghost'), { 'kubernetes.io/metadata.name': 'ghost' });
    const defined = clusterOf([namespace('ghost', { env: 'prod' })]).namespaces.get('ghost');
    assert.ok(defined);
    store.upsertNamespace(defined);
    assert.equal(store.namespaceLabels('ghost')?.env, 'prod');
    store.deleteNamespace('ghost');
    assert.deepEqual(store.namespaceLabels('ghost'), { 'kubernetes.io/metadata.name': 'ghost' });
    store.deletePod('ghost/p');
    assert.equal(store.namespaceLabels('ghost'), undefined, 'nothing uses it: gone');
  });

  it('moves a namespace-selected group when the namespace relabels', () => {
    const objects = shop([
      policy('shop', 'from-team', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'other' } } }] }],
      }),
    ]);
    const cluster = clusterOf(objects);
    const store = storeOf(cluster);
    const key = store.groupsOfPolicy('shop/from-team')[0] as string;
    assert.deepEqual([...(store.group(key)?.members.keys() ?? [])], ['other/client']);
    const relabelled = clusterOf([namespace('other', { team: 'none' })]).namespaces.get('other');
    assert.ok(relabelled);
    const delta = store.upsertNamespace(relabelled);
    assert.ok(delta.groups.has(key));
    assert.equal(store.group(key)?.members.size, 0);
  });

  it('lists a resync as every object before and after, in one delta', () => {
    const a = clusterOf(shop());
    // The very same objects, less the client: an object the store holds as is is not touched.
    const b: Cluster = { ...a, endpoints: a.endpoints.filter((e) => e.id !== 'other/client') };
    const store = storeOf(a);
    const delta = store.resync(b);
    assert.equal(delta.resync, true);
    assert.deepEqual(
      delta.pods.map((t) => [t.before?.id, t.after?.id]),
      [['other/client', undefined]],
    );
    assert.deepEqual(delta.policies, []);
    const changed = { ...(b.endpoints[0] as Endpoint) };
    const again = store.resync({ ...b, endpoints: [changed, ...b.endpoints.slice(1)] });
    assert.deepEqual(
      again.pods.map((t) => [t.before?.id, t.after === changed]),
      [[changed.id, true]],
    );
    assert.deepEqual(new Set(delta.groups), new Set(store.groupKeys()));
  });

  it('kept current change by change, answers as a store built from the last snapshot', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }),
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }),
        (first, second) => {
          const a = clusterOf(first);
          const b = clusterOf(second);
          const expected = observe(storeOf(b));
          const incremental = storeOf(a);
          for (const change of changesBetween(a, b)) applyChange(incremental, change);
          assert.deepEqual(observe(incremental), expected, 'change by change');
          const resynced = storeOf(a);
          resynced.resync(b);
          assert.deepEqual(observe(resynced), expected, 'resync from another snapshot');
          // And back again: nothing of b lingers.
          for (const change of changesBetween(b, a)) applyChange(incremental, change);
          assert.deepEqual(observe(incremental), observe(storeOf(a)), 'and back');
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('shares one group between equal peers of different policies, until the last lets go', () => {
    const twin = policy('shop', 'db-in-2', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }],
    });
    const store = storeOf(clusterOf(shop([twin])));
    const [key] = store.groupsOfPolicy('shop/db-in');
    assert.ok(key);
    assert.deepEqual(store.groupsOfPolicy('shop/db-in-2'), [key]);
    assert.deepEqual([...store.policiesOfGroup(key)].sort(), ['shop/db-in', 'shop/db-in-2']);
    store.deletePolicy('shop/db-in');
    assert.deepEqual([...store.policiesOfGroup(key)], ['shop/db-in-2']);
    store.deletePolicy('shop/db-in-2');
    assert.equal(store.group(key), undefined, 'released with its last user');
  });
});
