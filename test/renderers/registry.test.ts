/**
 * The render-target registry and the wiring every one-shot consumer shares: each registered name
 * loads a target that declares consistent capabilities; node targets render every node that
 * has pods (or the one named), cluster targets once; a pipeline whose renderers all read the
 * store compiles nothing; the classifier target keeps node addresses across node changes. The
 * same registry names the node datapaths the agent opens and the fleets the lab runs.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildTarget, compileCluster, nodesWithPods, renderCluster } from '../../src/pipeline/index.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import {
  FLEET_NAMES,
  NODE_DATAPATH_NAMES,
  TARGET_NAMES,
  isNodeDatapathName,
  isTargetName,
  loadFleet,
  loadTarget,
  loadTargets,
  openNodeDatapath,
} from '../../src/datapaths/index.ts';
import { storeReader } from '../../src/datapaths/store-reader.ts';
import { ClassifierRenderer } from '../../src/datapaths/bitmap/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterOf, ipOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

const TEST = join(import.meta.dirname, '..');

const objects = (): Raw[] => [
  namespace('a'),
  pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n2', hostIp: '192.168.0.2' }),
  pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1', hostIp: '192.168.0.1' }),
  pod('a', 'job', { app: 'job' }, { ips: ['10.0.0.3'] }),
  policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress'] }),
];

describe('render-target registry', () => {
  it('loads every registered name as a target of that name with consistent capabilities', async () => {
    const targets = await loadTargets();
    assert.deepEqual(
      targets.map((t) => t.name),
      TARGET_NAMES,
    );
    for (const target of targets) {
      assert.ok(isTargetName(target.name));
      assert.ok(target.description.length > 0, target.name);
      assert.ok(target.formats.length > 0, target.name);
      // Only a node target can need a node; a cluster target renders everything at once.
      if (target.capabilities.nodeRequired) assert.equal(target.capabilities.scope, 'node', target.name);
      // A target no interpreter and no kernel can judge would escape the conformance suite.
      assert.ok(target.interpreter || target.capabilities.applies === 'kernel', target.name);
    }
    assert.equal(isTargetName('ebpf-that-does-not-exist'), false);
    assert.equal(isTargetName('toString'), false);
  });

  it('names the node datapaths and fleets of its backends, and opens them', async () => {
    assert.deepEqual(NODE_DATAPATH_NAMES, ['nftables', 'ebpf', 'classifier', 'vpp-acl', 'vpptcp', 'neutron']);
    assert.equal(isNodeDatapathName('classifier'), true);
    assert.deepEqual(FLEET_NAMES, ['nftables', 'ebpf']);
    for (const name of FLEET_NAMES) {
      const fleet = await loadFleet(name);
      assert.equal(typeof fleet.open, 'function', name);
      assert.deepEqual(fleet.remove({ nodes: [], pods: [] }), [], name);
    }
    // A backend without a kernel side opens anywhere: its renderer joins a pipeline over the store.
    const state = new ClusterState();
    const classifier = await openNodeDatapath('classifier', { node: 'n1', state });
    try {
      assert.equal(classifier.name, 'classifier');
      assert.equal(classifier.renderer.reads, 'store');
      const pipeline = new PolicyPipeline({ state, renderers: [classifier.renderer], node: 'n1' });
      pipeline.apply({ type: 'resync', cluster: clusterOf(objects()) });
      assert.ok(classifier.counts().tables > 0);
      assert.deepEqual(await classifier.verify(), []);
    } finally {
      await classifier.close();
    }
    // A document backend writes to etcd and refuses to open without it.
    await assert.rejects(() => openNodeDatapath('vpp-acl', { node: 'n1', state }), /writes to etcd/);
    // Kuryr's controller runs once for the cluster, and refuses to open without Neutron's API.
    await assert.rejects(() => openNodeDatapath('neutron', { node: 'n1', state }), /--neutron-url/);
    await assert.rejects(
      () => openNodeDatapath('bridge', { node: 'n1', state }),
      /no datapath runs on a node/,
    );
  });

  it('has the lab suite run on every fleet, and the fault suite on every kernel node datapath', () => {
    // A test file per datapath (they run concurrently, and skip for different reasons): a backend
    // added to the registry fails here until its suites are.
    const calls = (dir: string, fn: string): Set<string> =>
      new Set(
        readdirSync(join(TEST, dir), { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('.test.ts'))
          .flatMap((file) =>
            [
              ...readFileSync(join(TEST, dir, file), 'utf8').matchAll(new RegExp(`${fn}\\('([a-z-]+)'`, 'g')),
            ].map((m) => m[1]!),
          ),
      );
    const labbed = new Set([...calls('lab', 'labSuite'), ...calls('ebpf', 'labSuite')]);
    for (const name of FLEET_NAMES) assert.ok(labbed.has(name), `no lab suite runs on ${name}`);
    const faulted = calls('agent', 'faultSuite');
    for (const name of ['nftables', 'ebpf']) assert.ok(faulted.has(name), `no fault suite runs on ${name}`);
  });

  it('renders a node target once per node that has pods, in node order, or the named node only', async () => {
    const cluster = clusterOf(objects());
    const acl = await loadTarget('vpp-acl');
    assert.deepEqual(nodesWithPods(cluster), ['n1', 'n2']);
    const all = renderCluster(acl, cluster);
    assert.deepEqual(
      all.map((r) => r.node),
      ['n1', 'n2'],
    );
    // Each node's output has only its own pods' interfaces.
    const n1 = all[0]?.output.acls.flatMap((a) => a.interfaces.egress) ?? [];
    assert.ok(n1.some((i) => i.includes('db')) && !n1.some((i) => i.includes('web')), n1.join());
    assert.deepEqual(
      renderCluster(acl, cluster, { node: 'n2' }).map((r) => r.node),
      ['n2'],
    );
    const nft = await loadTarget('nftables');
    assert.throws(() => renderCluster(nft, cluster), /name it/);
  });

  it('renders a cluster target once, passing the node on for what it prints', async () => {
    const cluster = clusterOf(objects());
    const bitmap = await loadTarget('bitmap');
    const rendered = renderCluster(bitmap, cluster, { node: 'n1' });
    assert.equal(rendered.length, 1);
    const printed = bitmap.print(rendered, { format: 'json', stats: false });
    assert.ok('json' in printed.document);
    const endpoints = (printed.document.json as { endpoints: { endpoint: string }[] }).endpoints;
    assert.deepEqual(
      endpoints.map((e) => e.endpoint),
      ['a/db'],
    );
  });

  it('does not compile tables when every renderer reads the store', () => {
    const cluster = clusterOf(objects());
    const reading = new PolicyPipeline({ renderers: [storeReader('neutron')] });
    reading.apply({ type: 'resync', cluster });
    assert.equal([...reading.compiledPods()].length, 0);
    // Without renderers the pipeline compiles (compile's own view), and with one that uses tables.
    assert.equal([...compileCluster(cluster).compiledPods()].length, 3);
  });

  it('builds a target over its own store, scoped to the node for node targets', async () => {
    const cluster = clusterOf(objects());
    const { pipeline } = buildTarget(await loadTarget('vpptcp'), cluster, { node: 'n2' });
    assert.deepEqual(
      [...pipeline.compiledPods()].map(([id]) => id),
      ['a/web'],
    );
  });
});

describe('the classifier as a render target', () => {
  it('treats node addresses as node-local, also after a node changes address', () => {
    const state = new ClusterState();
    const renderer = new ClassifierRenderer(state, { tiers: true });
    const pipeline = new PolicyPipeline({ state, renderers: [renderer] });
    const cluster = clusterOf(objects());
    pipeline.apply({ type: 'resync', cluster });
    const toDb = (src: string) =>
      renderer.classifier.allows({ src: ipOf(src), dst: ipOf('10.0.0.2'), protocol: 'TCP', port: 80 });
    // db is isolated for ingress: only its own node gets through.
    assert.equal(toDb('192.168.0.1'), true);
    assert.equal(toDb('192.168.0.2'), false);
    assert.equal(toDb('192.168.0.9'), false);
    const n1 = cluster.nodes.get('n1');
    assert.ok(n1);
    pipeline.apply({ type: 'upsert-node', node: { ...n1, addresses: [ipOf('192.168.0.9')] } });
    assert.equal(toDb('192.168.0.9'), true);
    assert.equal(toDb('192.168.0.1'), false);
  });
});
