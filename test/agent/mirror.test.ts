/**
 * The agent's mirror of etcd against the loader: after any history of puts and deletes of
 * namespaces, nodes, pods (owned by ReplicaSets, Jobs, StatefulSets, workloads missing or present,
 * names shared with workloads), workloads and policies, applied in random batches, the mirror's
 * cluster equals what `loadFromObjects` assembles from the values etcd would hold; a pipeline fed
 * the mirror's incremental changes renders exactly what a fresh render of that cluster does; and
 * the fast decoding path gives the full decoder's objects. Policies are sometimes staged: the mirror
 * holds them apart, and the pipeline renders exactly what it would with them deleted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ClusterMirror, type KeyChange } from '../../src/agent/mirror.ts';
import { fastDecode } from '../../src/agent/decode.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { formatIp } from '../../src/net/ip.ts';
import { STAGED_ANNOTATION, type Cluster } from '../../src/model/types.ts';
import { PolicyPipeline, renderCluster } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { loadTarget, type RenderTarget } from '../../src/datapaths/index.ts';
import { decodeValue, encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { generateShape } from '../../src/generate/shapes.ts';
import { ruleArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import type { Raw } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 60);
const layout = new KeyLayout('/test');
const NS = ['a', 'b', 'c'];

const POD_NAMES = ['p0', 'p1', 'p2', 'web', 'db'];
/**
 * A pod's address: it changes between versions of the pod, but two pods never share one (live
 * pods do not; two pods at one address render differently depending on arrival order, which is
 * the renderer's concern, not the mirror's).
 */
const podIp = (ns: string, name: string, version: number): string =>
  `10.${NS.indexOf(ns) + 1}.${POD_NAMES.indexOf(name) + 1}.${version}`;

const labels = fc.record(
  { app: fc.constantFrom('web', 'db'), 'pod-template-hash': fc.constantFrom('h1', 'h2') },
  { requiredKeys: [] },
);
const owner = fc.constantFrom(
  undefined,
  { kind: 'ReplicaSet', name: 'web-h1' },
  { kind: 'ReplicaSet', name: 'web-h2' },
  { kind: 'Job', name: 'j1' },
  { kind: 'StatefulSet', name: 'db' },
  { kind: 'Deployment', name: 'web' },
);
const ownerRefs = (o: { kind: string; name: string } | undefined): Raw =>
  o
    ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: o.kind, name: o.name, uid: 'u', controller: true }] }
    : {};
const ports = fc.subarray([
  { name: 'http', containerPort: 80 },
  { name: 'http', containerPort: 8080 },
  { name: 'dns', containerPort: 53, protocol: 'UDP' },
]);

const podObject = fc
  .record({
    ns: fc.constantFrom(...NS),
    name: fc.constantFrom(...POD_NAMES),
    labels,
    owner,
    ip: fc.integer({ min: 1, max: 6 }),
    v6: fc.boolean(),
    node: fc.constantFrom(undefined, 'n1', 'n2'),
    host: fc.integer({ min: 1, max: 3 }),
    hostNetwork: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    ports,
  })
  .map((p): Raw => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.ns, labels: p.labels, ...ownerRefs(p.owner) },
    spec: {
      ...(p.node ? { nodeName: p.node } : {}),
      ...(p.hostNetwork ? { hostNetwork: true } : {}),
      containers: [{ name: 'c', ports: p.ports }],
    },
    status: {
      phase: 'Running',
      podIP: podIp(p.ns, p.name, p.ip),
      podIPs: [
        { ip: podIp(p.ns, p.name, p.ip) },
        ...(p.v6 ? [{ ip: `fd00::${NS.indexOf(p.ns) + 1}:${POD_NAMES.indexOf(p.name) + 1}:${p.ip}` }] : []),
      ],
      hostIP: `172.16.0.${p.host}`,
    },
  }));

const WORKLOADS: readonly [string, string, { kind: string; name: string } | undefined][] = [
  ['Deployment', 'web', undefined],
  ['Deployment', 'p0', undefined],
  ['ReplicaSet', 'web-h1', { kind: 'Deployment', name: 'web' }],
  ['ReplicaSet', 'orphan', undefined],
  ['Job', 'j1', { kind: 'CronJob', name: 'cj' }],
  ['CronJob', 'cj', undefined],
  ['StatefulSet', 'db', undefined],
];
const workloadObject = fc
  .record({ ns: fc.constantFrom(...NS), which: fc.nat(WORKLOADS.length - 1), labels, ports })
  .map(({ ns, which, labels: l, ports: p }): Raw => {
    const [kind, name, o] = WORKLOADS[which]!;
    const template = { metadata: { labels: l }, spec: { containers: [{ name: 'c', ports: p }] } };
    return {
      apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1',
      kind,
      metadata: { name, namespace: ns, ...ownerRefs(o) },
      spec: kind === 'CronJob' ? { jobTemplate: { spec: { template } } } : { template },
    };
  });

const namespaceObject = fc
  .record({ name: fc.constantFrom(...NS), team: fc.constantFrom('x', 'y') })
  .map(({ name, team }): Raw => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { team } },
  }));

const nodeObject = fc
  .record({ name: fc.constantFrom('n1', 'n2', 'n3'), zone: fc.constantFrom('z1', 'z2'), host: fc.nat(3) })
  .map(({ name, zone, host }): Raw => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { zone } },
    status: { addresses: [{ type: 'InternalIP', address: `172.16.0.${host + 1}` }] },
  }));

/** Policies come staged (`palisade.dev/staged`) one time in three: never enforced, still mirrored. */
const staged = fc.integer({ min: 0, max: 2 }).map((n) => n === 0);
const stagedMark = (mark: boolean): Raw => (mark ? { annotations: { [STAGED_ANNOTATION]: 'true' } } : {});

const policyObject = fc
  .record({
    ns: fc.constantFrom(...NS),
    name: fc.constantFrom('p1', 'p2'),
    app: fc.constantFrom('web', 'db'),
    ingress: fc.array(ruleArb('from'), { maxLength: 2 }),
    egress: fc.array(ruleArb('to'), { maxLength: 1 }),
    staged,
  })
  .map((p): Raw => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: p.name, namespace: p.ns, ...stagedMark(p.staged) },
    spec: {
      podSelector: { matchLabels: { app: p.app } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: p.ingress,
      egress: p.egress,
    },
  }));

const anpObject = fc
  .record({ priority: fc.nat(5), app: fc.constantFrom('web', 'db'), staged })
  .map(({ priority, app, staged: mark }): Raw => ({
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'AdminNetworkPolicy',
    metadata: { name: 'anp', ...stagedMark(mark) },
    spec: {
      priority,
      subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app } } } },
      ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { team: 'y' } } }] }],
    },
  }));

type Step = { put: Raw } | { remove: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: podObject.map((put) => ({ put })) },
  { weight: 3, arbitrary: workloadObject.map((put) => ({ put })) },
  { weight: 1, arbitrary: namespaceObject.map((put) => ({ put })) },
  { weight: 1, arbitrary: nodeObject.map((put) => ({ put })) },
  { weight: 2, arbitrary: policyObject.map((put) => ({ put })) },
  { weight: 1, arbitrary: anpObject.map((put) => ({ put })) },
  { weight: 4, arbitrary: fc.nat(1000).map((remove) => ({ remove })) },
);

/** What etcd holds after the steps so far: key → value, in key order when read. */
class FakeEtcd {
  readonly values = new Map<string, { value: string; modRevision: number }>();
  revision = 1;
  apply(s: Step): KeyChange | undefined {
    this.revision++;
    if ('put' in s) {
      const encoded = encodeObject(layout, s.put, 'test');
      assert.ok(encoded.value, `generated object is invalid: ${JSON.stringify(encoded.diagnostics)}`);
      this.values.set(encoded.key, { value: encoded.value, modRevision: this.revision });
      return { key: encoded.key, value: encoded.value, modRevision: this.revision };
    }
    const keys = [...this.values.keys()];
    if (keys.length === 0) return undefined;
    const key = keys[s.remove % keys.length]!;
    this.values.delete(key);
    return { key, value: undefined, modRevision: this.revision };
  }
  cluster(): Cluster {
    const sorted = [...this.values].sort(([a], [b]) => (a < b ? -1 : 1));
    return loadFromObjects(sorted.map(([, v]) => JSON.parse(v.value) as unknown)).cluster;
  }
  /** The cluster of the objects held with every staged policy deleted instead. */
  withoutStaged(): Cluster {
    const objects = [...this.values]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, v]) => JSON.parse(v.value) as Raw)
      .filter((o) => (o.metadata as Raw).annotations === undefined || o.kind === 'Namespace');
    return loadFromObjects(objects).cluster;
  }
}

/** A cluster as comparable plain data (node addresses as a set: their order is not part of it). */
function plain(cluster: Cluster): unknown {
  return JSON.parse(
    JSON.stringify(
      {
        namespaces: [...cluster.namespaces.values()].filter((n) => !n.implicit),
        endpoints: cluster.endpoints,
        policies: cluster.policies,
        clusterPolicies: cluster.clusterPolicies,
        staged: cluster.staged,
        nodes: [...cluster.nodes.values()].map((n) => ({
          ...n,
          addresses: n.addresses.map(formatIp).sort(),
        })),
      },
      (key, value: unknown) =>
        key === 'location' ? undefined : typeof value === 'bigint' ? value.toString() : value,
    ),
  );
}

/**
 * Outputs compared as what they mean: VPP session rules are matched by prefix and port, not by
 * their order in the list (the incremental and the fresh render may list a group's members in
 * different orders), so their rules are sorted; ACL rules stay in order (first match wins).
 */
function canonical(output: unknown): unknown {
  const o = output as { rules?: { tag: string }[]; acls?: unknown };
  if (o.acls !== undefined || !Array.isArray(o.rules)) return output;
  return { ...o, rules: o.rules.map((r) => JSON.stringify(r)).sort() };
}

const batches = fc.array(fc.array(step, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 });

describe('agent mirror', () => {
  it('equals the loader after random histories in random batches', () => {
    fc.assert(
      fc.property(batches, (history) => {
        const etcd = new FakeEtcd();
        const mirror = new ClusterMirror({ layout });
        for (const batch of history) {
          const changes = batch.map((s) => etcd.apply(s)).filter((c): c is KeyChange => c !== undefined);
          mirror.apply(changes);
          assert.deepEqual(plain(mirror.snapshot()), plain(etcd.cluster()));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("feeds a node's pipeline so it renders what a fresh render of the same cluster does", async () => {
    const targets: RenderTarget[] = [
      await loadTarget('vpp-acl'),
      await loadTarget('vpptcp'),
    ] as RenderTarget[];
    fc.assert(
      fc.property(batches, (history) => {
        const etcd = new FakeEtcd();
        const mirror = new ClusterMirror({ layout, node: 'n1' });
        const live = targets.map((target) => {
          const state = new ClusterState();
          const instance = target.create(state, { node: 'n1', options: {} });
          const pipeline = new PolicyPipeline({ state, renderers: [instance.renderer], node: 'n1' });
          pipeline.apply({ type: 'resync', cluster: mirror.snapshot() });
          return { pipeline, instance };
        });
        for (const batch of history) {
          const changes = mirror.apply(
            batch.map((s) => etcd.apply(s)).filter((c): c is KeyChange => c !== undefined),
          );
          for (const { pipeline } of live) pipeline.applyBatch(changes);
        }
        const fresh = etcd.cluster();
        // Staged policies change nothing enforced: as if they were not there at all.
        const unstaged = etcd.withoutStaged();
        targets.forEach((target, i) => {
          const [expected] = renderCluster(target, fresh, { node: 'n1' });
          assert.deepEqual(canonical(live[i]!.instance.output()), canonical(expected!.output), target.name);
          const [bare] = renderCluster(target, unstaged, { node: 'n1' });
          assert.deepEqual(canonical(live[i]!.instance.output()), canonical(bare!.output), target.name);
        });
      }),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  });

  it('relists after a gap as exactly the changes in between', () => {
    fc.assert(
      fc.property(batches, batches, (first, second) => {
        const etcd = new FakeEtcd();
        const mirror = new ClusterMirror({ layout });
        for (const batch of first)
          mirror.apply(batch.map((s) => etcd.apply(s)).filter((c) => c !== undefined));
        for (const batch of second) for (const s of batch) etcd.apply(s);
        const listed = [...etcd.values].map(([key, v]) => ({ key, ...v }));
        mirror.apply(mirror.relist(listed));
        assert.deepEqual(plain(mirror.snapshot()), plain(etcd.cluster()));
      }),
      { numRuns: RUNS },
    );
  });

  it("changes a pod without changing its node when the node's addresses stay (no Node object)", () => {
    const etcd = new FakeEtcd();
    const mirror = new ClusterMirror({ layout, node: 'n1' });
    const podWith = (labels: Record<string, string>): Raw => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x', namespace: 'a', labels },
      spec: { nodeName: 'n1' },
      status: { podIP: '10.0.0.9' },
    });
    const first = mirror.apply([etcd.apply({ put: podWith({ app: 'web' }) })!]);
    assert.ok(
      first.some((c) => c.type === 'upsert-node'),
      'the node appears with its first pod',
    );
    const relabelled = mirror.apply([etcd.apply({ put: podWith({ app: 'db' }) })!]);
    assert.deepEqual(
      relabelled.map((c) => c.type),
      ['upsert-pod'],
    );
  });

  it('decodes policies only for namespaces with a pod on its node, and catches up when one arrives', () => {
    const etcd = new FakeEtcd();
    const mirror = new ClusterMirror({ layout, node: 'n1' });
    const pol = (ns: string): Raw => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny', namespace: ns },
      spec: { podSelector: {} },
    });
    const podOn = (ns: string, node: string): Raw => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x', namespace: ns },
      spec: { nodeName: node },
      status: { podIP: '10.0.0.9' },
    });
    const put = (o: Raw) => mirror.apply([etcd.apply({ put: o })!]);
    assert.deepEqual(put(pol('a')), []);
    assert.equal(mirror.deferredPolicies, 1);
    put(podOn('a', 'n2'));
    assert.equal(mirror.deferredPolicies, 1);
    const changes = put(podOn('b', 'n1'));
    assert.ok(!changes.some((c) => c.type === 'upsert-policy'));
    const arrived = put({ ...podOn('a', 'n1'), metadata: { name: 'y', namespace: 'a' } });
    assert.deepEqual(
      arrived
        .filter((c) => c.type === 'upsert-policy')
        .map((c) => c.type === 'upsert-policy' && c.policy.name),
      ['deny'],
    );
    assert.equal(mirror.deferredPolicies, 0);
  });
});

describe('agent fast decoding', () => {
  it('gives the full decoder’s objects for every pod and namespace of a generated shape', () => {
    const shape = generateShape('a', { scale: 0.004 });
    let fast = 0;
    for (const object of [...shape.namespaces, ...shape.pods]) {
      const encoded = encodeObject(layout, object, 'gen');
      const value = JSON.parse(encoded.value!) as Record<string, unknown>;
      const quick = fastDecode(encoded.key, value);
      assert.ok(quick, `fast path refused ${encoded.key}`);
      fast++;
      assert.deepEqual(quick, decodeValue(encoded.key, encoded.value!).object);
    }
    assert.ok(fast > 100);
  });

  it('gives the full decoder’s objects for random pods, or leaves them to it', () => {
    fc.assert(
      fc.property(podObject, fc.constantFrom(...SAMPLE_PORTS), (pod, [port, protocol]) => {
        const spec = pod.spec as { containers: { ports: unknown[] }[] };
        spec.containers[0]!.ports.push({ containerPort: port, protocol });
        const encoded = encodeObject(layout, pod, 'gen');
        const quick = fastDecode(encoded.key, JSON.parse(encoded.value!) as Record<string, unknown>);
        assert.ok(quick);
        assert.deepEqual(quick, decodeValue(encoded.key, encoded.value!).object);
      }),
      { numRuns: RUNS },
    );
  });

  it('leaves anything but the reduced form to the full decoder', () => {
    const base = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a' } };
    for (const odd of [
      { ...base, metadata: { ...base.metadata, annotations: { x: 'y' } } },
      { ...base, spec: { initContainers: [] } },
      { ...base, status: { phase: 'Succeeded' } },
      { ...base, status: { podIP: '10.0.0.01' } },
      { ...base, status: { podIP: 'fd00:0::1' } },
      { ...base, metadata: { ...base.metadata, labels: { a: 1 } } },
      { ...base, spec: { containers: [{ ports: [{ containerPort: 0 }] }] } },
      { ...base, apiVersion: 'v2' },
    ])
      assert.equal(fastDecode('/k', odd as Record<string, unknown>), undefined, JSON.stringify(odd));
  });
});
