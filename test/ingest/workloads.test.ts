/**
 * Pods belong to their workloads: owner references are followed to the top-level workload,
 * templates stand for a workload only while none of its pods is in the input, and the matrix
 * reports one row per workload (or per pod with --by pod) with the JSON contract's shape.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { computeViewMatrix } from '../../src/analysis/workload-matrix.ts';
import { cli } from '../helpers/cli.ts';
import { load, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

/** What `kubectl get deploy,rs,po -n shop -o yaml` prints for one application (trimmed). */
const DEPLOY_RS_PODS = `
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: shop, uid: d1}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata:
      name: web-5d8f7c9b4
      namespace: shop
      ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d1, controller: true}]
    spec:
      template:
        metadata: {labels: {app: web, pod-template-hash: 5d8f7c9b4}}
        spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
  - apiVersion: v1
    kind: Pod
    metadata:
      name: web-5d8f7c9b4-abcde
      namespace: shop
      labels: {app: web, pod-template-hash: 5d8f7c9b4}
      ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7c9b4, controller: true}]
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
    status: {phase: Running, podIP: 10.0.0.1}
  - apiVersion: v1
    kind: Pod
    metadata:
      name: web-5d8f7c9b4-fghij
      namespace: shop
      labels: {app: web, pod-template-hash: 5d8f7c9b4}
      ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7c9b4, controller: true}]
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
    status: {phase: Running, podIP: 10.0.0.2}
`;

function owned(raw: Raw, kind: string, name: string, controller: boolean | undefined = true): Raw {
  const metadata = raw.metadata as Raw;
  const reference = {
    apiVersion: 'apps/v1',
    kind,
    name,
    ...(controller === undefined ? {} : { controller }),
  };
  return { ...raw, metadata: { ...metadata, ownerReferences: [reference] } };
}

function workload(kind: string, ns: string, name: string, labels: Record<string, string>): Raw {
  const template = { metadata: { labels }, spec: { containers: [{ name: 'c' }] } };
  const apiVersion = kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1';
  return {
    apiVersion,
    kind,
    metadata: { name, namespace: ns },
    spec: kind === 'CronJob' ? { jobTemplate: { spec: { template } } } : { template },
  };
}

const workloadsOf = (objects: readonly Raw[]) =>
  load(objects).cluster.endpoints.map(
    (e) => `${e.id} ${e.kind} → ${e.workload ? `${e.workload.kind}/${e.workload.name}` : '-'}`,
  );

describe('workload attribution', () => {
  it('a Deployment, its ReplicaSet and its pods are one workload', () => {
    const { cluster, diagnostics } = loadFromTexts([{ name: 'dump.yaml', text: DEPLOY_RS_PODS }]);
    assert.deepEqual(
      diagnostics.filter((d) => d.severity !== 'info'),
      [],
    );
    assert.deepEqual(
      cluster.endpoints.map((e) => `${e.id} ${e.kind} ${e.workload?.kind}/${e.workload?.name}`),
      ['shop/web-5d8f7c9b4-abcde Pod Deployment/web', 'shop/web-5d8f7c9b4-fghij Pod Deployment/web'],
    );
    const matrix = computeViewMatrix(cluster, { queries: [] });
    assert.deepEqual(
      matrix.rows.map((r) => [r.label, r.id, r.kind]),
      [['shop/web[Deployment]', 'shop/web', 'Deployment']],
    );
    const byPod = computeViewMatrix(cluster, { queries: [], by: 'pod' });
    assert.deepEqual(
      byPod.rows.map((r) => r.label),
      ['shop/web-5d8f7c9b4-abcde', 'shop/web-5d8f7c9b4-fghij'],
    );
  });

  it('a ReplicaSet missing from the input is known as its Deployment by the pod-template-hash', () => {
    const p = pod('shop', 'api-7f9c-x1', { app: 'api', 'pod-template-hash': '7f9c' });
    assert.deepEqual(workloadsOf([owned(p, 'ReplicaSet', 'api-7f9c')]), [
      'shop/api-7f9c-x1 Pod → Deployment/api',
    ]);
    // Without the label (or with one the name does not end with) the ReplicaSet is the workload.
    const bare = pod('shop', 'api-7f9c-x2', { app: 'api' });
    const other = pod('shop', 'api-7f9c-x3', { app: 'api', 'pod-template-hash': 'zzzz' });
    assert.deepEqual(
      workloadsOf([owned(bare, 'ReplicaSet', 'api-7f9c'), owned(other, 'ReplicaSet', 'api-7f9c')]),
      ['shop/api-7f9c-x2 Pod → ReplicaSet/api-7f9c', 'shop/api-7f9c-x3 Pod → ReplicaSet/api-7f9c'],
    );
  });

  it('Job pods belong to their CronJob when the Job is in the input', () => {
    const job = owned(workload('Job', 'ops', 'backup-2900', { app: 'backup' }), 'CronJob', 'backup');
    const cron = workload('CronJob', 'ops', 'backup', { app: 'backup' });
    const p = owned(pod('ops', 'backup-2900-q', { app: 'backup' }), 'Job', 'backup-2900');
    assert.deepEqual(workloadsOf([cron, job, p]), ['ops/backup-2900-q Pod → CronJob/backup']);
    // Without pods, the CronJob's template stands for the Job's too.
    assert.deepEqual(workloadsOf([cron, job]), ['ops/backup CronJob → CronJob/backup']);
    // The Job alone, owned by a CronJob not in the input, stands for that CronJob.
    assert.deepEqual(workloadsOf([job]), ['ops/backup-2900 Job → CronJob/backup']);
  });

  it('templates without pods stand for their workload; bare pods are their own', () => {
    const objects = [
      workload('StatefulSet', 'db', 'pg', { app: 'pg' }),
      workload('DaemonSet', 'ops', 'agent', { app: 'agent' }),
      owned(pod('ops', 'agent-x', { app: 'agent' }), 'DaemonSet', 'agent'),
      pod('db', 'debug', { app: 'debug' }),
    ];
    assert.deepEqual(workloadsOf(objects), [
      'db/debug Pod → -',
      'db/pg StatefulSet → StatefulSet/pg',
      'ops/agent-x Pod → DaemonSet/agent',
    ]);
  });

  it('follows only the controller; a Node owner, a cycle or an unusable reference leave the pod alone', () => {
    const mirror = owned(pod('kube-system', 'etcd-node1', { c: 'etcd' }), 'Node', 'node1');
    const notController = owned(pod('a', 'p', {}), 'ReplicaSet', 'rs', false);
    const lone = owned(pod('a', 'q', {}), 'ReplicaSet', 'rs-q', undefined);
    const cycleA = owned(workload('ReplicaSet', 'c', 'x', {}), 'ReplicaSet', 'y');
    const cycleB = owned(workload('ReplicaSet', 'c', 'y', {}), 'ReplicaSet', 'x');
    const inCycle = owned(pod('c', 'z', {}), 'ReplicaSet', 'x');
    const noKind = {
      ...pod('a', 'r', {}),
      metadata: { name: 'r', namespace: 'a', ownerReferences: [{ name: 'who', controller: true }] },
    };
    const result = workloadsOf([mirror, notController, lone, cycleA, cycleB, inCycle, noKind]);
    assert.deepEqual(
      result.filter((line) => !line.startsWith('c/')),
      ['a/p Pod → -', 'a/q Pod → ReplicaSet/rs-q', 'a/r Pod → -', 'kube-system/etcd-node1 Pod → -'],
    );
    assert.ok(
      result.some((line) => /^c\/z Pod → ReplicaSet\/[xy]$/.test(line)),
      result.join('\n'),
    );
  });
});

describe('matrix by workload', () => {
  // Two pods of one Deployment, one of which a policy tells apart (a canary label).
  const objects = [
    namespace('shop'),
    owned(
      pod('shop', 'web-1', { app: 'web', 'pod-template-hash': 'h' }, { ips: ['10.0.0.1'] }),
      'ReplicaSet',
      'web-h',
    ),
    owned(
      pod('shop', 'web-2', { app: 'web', track: 'canary', 'pod-template-hash': 'h' }, { ips: ['10.0.0.2'] }),
      'ReplicaSet',
      'web-h',
    ),
    owned(
      pod('shop', 'db-0', { app: 'db' }, { ips: ['10.0.0.3'], ports: [{ containerPort: 5432 }] }),
      'StatefulSet',
      'db',
    ),
    policy('shop', 'db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { track: 'canary' } } }], ports: [{ port: 5432 }] }],
    }),
  ];
  const cluster = load(objects).cluster;

  it('a row pair is allowed only when every pod pair is, and says when only some are', () => {
    const matrix = computeViewMatrix(cluster, { queries: [{ port: 5432, protocol: 'TCP' }] });
    const labels = matrix.rows.map((r) => r.label);
    assert.deepEqual(labels, ['shop/db[StatefulSet]', 'shop/web[Deployment]']);
    assert.equal(matrix.allowed(1, 0, 0), false);
    assert.equal(matrix.partial?.(1, 0, 0), '1 of 2 pod pairs');
    assert.equal(matrix.partial?.(0, 1, 0), undefined);
    const ports = computeViewMatrix(cluster, { queries: [] });
    assert.deepEqual(ports.ports(1, 0).ranges.TCP, []);
    assert.deepEqual(ports.partialPorts?.(1, 0)?.ports.ranges.TCP, [[5432, 5432]]);
  });

  describe('on the command line', () => {
    let dir = '';
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), `palisade-workloads-${process.pid}-`));
      await writeFile(join(dir, 'objects.yaml'), objects.map((o) => JSON.stringify(o)).join('\n---\n'));
      await writeFile(join(dir, 'dump.yaml'), DEPLOY_RS_PODS);
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it('text names workloads ns/name[Kind] and marks partial cells; --by pod lists pods', async () => {
      const r = await cli(['matrix', '-f', join(dir, 'objects.yaml'), '--port', '5432']);
      assert.equal(r.code, 0, r.stderr);
      // The last column is the addresses outside the cluster.
      assert.match(r.stdout, /^shop\/web\[Deployment\] +~ +\. +\. +2$/m);
      assert.match(r.stdout, /~ some pod pairs only/);
      const ports = await cli(['matrix', '-f', join(dir, 'objects.yaml')]);
      assert.match(
        ports.stdout,
        /^shop\/web\[Deployment\] → shop\/db\[StatefulSet\]: none for every pod pair; TCP 5432 for some pod pairs only$/m,
      );
      const byPod = await cli(['matrix', '-f', join(dir, 'objects.yaml'), '--port', '5432', '--by', 'pod']);
      assert.match(byPod.stdout, /^shop\/web-1 +X +\. +\. +\. +2\nshop\/web-2 +\. +\. +\. +\. +3$/m);
      assert.doesNotMatch(byPod.stdout, /~/);
      assert.equal((await cli(['matrix', '-f', dir, '--by', 'node'])).code, 2);
    });

    it('keeps the JSON contract: from/to are ns/name, the kind beside them', async () => {
      const r = await cli(['matrix', '-f', join(dir, 'dump.yaml'), '--port', '8080', '-o', 'json']);
      assert.equal(r.code, 0, r.stderr);
      // The addresses outside the cluster are a list of their own beside the results.
      const { addresses, ...rest } = JSON.parse(r.stdout) as { addresses?: unknown[] };
      assert.ok(Array.isArray(addresses) && addresses.length > 0);
      assert.deepEqual(rest, {
        results: [
          {
            from: 'shop/web',
            to: 'shop/web',
            port: 8080,
            protocol: 'TCP',
            allowed: true,
            fromKind: 'Deployment',
            toKind: 'Deployment',
          },
        ],
      });
      const pods = await cli([
        'matrix',
        '-f',
        join(dir, 'dump.yaml'),
        '--port',
        '8080',
        '-o',
        'json',
        '--by',
        'pod',
      ]);
      const results = (JSON.parse(pods.stdout) as { results: { from: string; fromKind: string }[] }).results;
      assert.deepEqual(
        results.map((x) => `${x.from} ${x.fromKind}`),
        [
          'shop/web-5d8f7c9b4-abcde Pod',
          'shop/web-5d8f7c9b4-abcde Pod',
          'shop/web-5d8f7c9b4-fghij Pod',
          'shop/web-5d8f7c9b4-fghij Pod',
        ],
      );
      const partial = await cli(['matrix', '-f', join(dir, 'objects.yaml'), '--port', '5432', '-o', 'json']);
      const cell = (
        JSON.parse(partial.stdout) as { results: { from: string; to: string; partial?: string }[] }
      ).results.find((x) => x.from === 'shop/web' && x.to === 'shop/db');
      assert.equal(cell?.partial, '1 of 2 pod pairs');
    });

    it('check and explain take workload names', async () => {
      const r = await cli([
        'check',
        '-f',
        join(dir, 'objects.yaml'),
        '--from',
        'shop/web',
        '--to',
        'shop/db[StatefulSet]',
        '--port',
        '5432',
      ]);
      assert.match(r.stdout, /^shop\/web\[Deployment\] → shop\/db\[StatefulSet\] TCP\/5432: DENIED$/m);
      assert.match(r.stdout, /note: allowed for 1 of 2 pod pairs; denied for shop\/web-1 → shop\/db-0/);
      const json = JSON.parse(
        (
          await cli([
            'check',
            '-f',
            join(dir, 'objects.yaml'),
            '--from',
            'shop/Deployment/web',
            '--to',
            'shop/db',
            '--port',
            '5432',
            '-o',
            'json',
          ])
        ).stdout,
      ) as { podPairs: { allowed: number; total: number } };
      assert.deepEqual([json.podPairs.allowed, json.podPairs.total], [1, 2]);
      const explain = await cli(['explain', '-f', join(dir, 'dump.yaml'), '--pod', 'shop/web[Deployment]']);
      assert.equal(explain.code, 0, explain.stderr);
      assert.match(explain.stdout, /^shop\/web-5d8f7c9b4-abcde \(Pod/m);
      assert.match(explain.stdout, /^shop\/web-5d8f7c9b4-fghij \(Pod/m);
    });
  });
});
