/**
 * The reflector against the fake API server (official client unmodified) and a real etcd: the
 * initial reflect, nothing written for changes policy cannot see, a forced 410 reconciled, a
 * restart that resumes from the recorded resourceVersion without listing or rewriting, bad
 * objects skipped, a takeover when the leader dies, and manifests with --watch.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectEtcd } from '../../src/etcd/index.ts';
import { decodeValue } from '../../src/reflected/index.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { tempDir } from '../fake-apiserver/fixtures.ts';
import { cli } from '../helpers/cli.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { needsEtcd, suiteEtcd } from './etcd-fixture.ts';
import {
  apiReflector,
  converged,
  etcdContents,
  expectedContents,
  layout,
  reflectManifests,
  settled,
  until,
} from './reflector-helpers.ts';

const namespace = (name: string, labels: Record<string, string> = {}): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } },
});

export const pod = (
  ns: string,
  name: string,
  labels: Record<string, string>,
  ip: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels, annotations: { note: 'not policy' } },
  spec: {
    nodeName: 'node-1',
    containers: [{ name: 'c', image: 'nginx', ports: [{ name: 'http', containerPort: 80 }] }],
  },
  status: {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    hostIP: '192.168.0.1',
    conditions: [{ type: 'Ready', status: 'True' }],
    ...extra,
  },
});

const policy = (ns: string, name: string, app: string): Record<string, unknown> => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns, generation: 1 },
  spec: { podSelector: { matchLabels: { app } }, ingress: [{ from: [{ podSelector: {} }] }] },
});

describe('the reflector', { skip: needsEtcd }, () => {
  const etcd = suiteEtcd();
  const temp = tempDir('reflector');
  const server = new FakeApiServer();
  before(async () => {
    if (needsEtcd) return;
    await server.start();
    server.store.apply(namespace('shop', { team: 'shop' }));
    server.store.apply(namespace('other'));
    for (let i = 0; i < 30; i++)
      server.store.apply(pod('shop', `web-${i}`, { app: 'web' }, `10.0.0.${i + 1}`));
    server.store.apply(policy('shop', 'web', 'web'));
  });
  after(async () => {
    await server.stop();
    temp.cleanup();
  });
  /** A directory of its own holding the shop's namespaces as manifests. */
  const namespacesDir = (name: string): string => {
    const dir = join(temp.dir, name);
    mkdirSync(dir);
    copyFileSync('examples/shop/namespaces.yaml', join(dir, 'namespaces.yaml'));
    return dir;
  };

  it('reflects the cluster, then follows it; churn policy cannot see writes nothing', async () => {
    const { store } = etcd;
    const { reflector, running } = await apiReflector(server, store, temp.dir, { elect: false });
    try {
      await converged(server, store);
      const decoded = decodeValue(
        layout.key('Pod', 'shop', 'web-3'),
        (await etcdContents(store)).get(layout.key('Pod', 'shop', 'web-3'))!,
      );
      assert.equal(decoded.object?.kind, 'Endpoint');
      const before = await settled(store);
      // Status churn, annotations, container restarts: none of it is policy's business.
      for (let i = 0; i < 10; i++) {
        server.store.apply(
          pod('shop', `web-${i}`, { app: 'web' }, `10.0.0.${i + 1}`, {
            conditions: [{ type: 'Ready', status: i % 2 ? 'False' : 'True', lastTransitionTime: String(i) }],
            containerStatuses: [{ name: 'c', restartCount: i }],
          }),
        );
      }
      // Then one real change, to know the churn has been processed when it shows up.
      server.store.apply(pod('shop', 'web-20', { app: 'web', version: 'v2' }, '10.0.0.21'));
      await converged(server, store);
      await until(() => reflector.stats!.received >= 30 + 11);
      const afterRevision = await settled(store);
      assert.equal(afterRevision - before, 1, 'exactly one transaction: the label change');
      assert.equal(reflector.stats!.unchanged >= 10, true);
    } finally {
      reflector.stop();
      await running;
    }
  });

  it('after a forced 410 it lists again and reconciles: deletions made meanwhile removed, unchanged keys not rewritten', async () => {
    const { store } = etcd;
    const { reflector, running } = await apiReflector(server, store, temp.dir, { elect: false });
    try {
      await converged(server, store);
      const untouched = (await store.get(layout.key('Pod', 'shop', 'web-25')))!.modRevision;
      // Changes while the watch is cut, then history compacted: the resumed watch gets 410.
      server.dropWatches();
      server.store.remove('Pod', 'shop', 'web-0');
      server.store.apply(pod('shop', 'web-1', { app: 'db' }, '10.0.0.2'));
      server.store.apply(pod('other', 'new', { app: 'web' }, '10.0.1.1'));
      server.store.compact();
      server.requests.length = 0;
      await converged(server, store);
      assert.ok(
        server.requests.some((r) => r.verb === 'list' && r.path === '/api/v1/pods'),
        'relisted',
      );
      assert.equal((await store.get(layout.key('Pod', 'shop', 'web-25')))!.modRevision, untouched);
      assert.equal(await store.get(layout.key('Pod', 'shop', 'web-0')), undefined);
    } finally {
      reflector.stop();
      await running;
    }
  });

  it('a restarted reflector resumes from the recorded resourceVersion: no list, nothing rewritten', async () => {
    const { store } = etcd;
    const first = await apiReflector(server, store, temp.dir, { elect: false });
    await converged(server, store);
    server.store.apply(pod('shop', 'web-2', { app: 'web', tier: 'x' }, '10.0.0.3'));
    await converged(server, store);
    await until(
      async () =>
        (await store.get(layout.resourceVersionKey('Pod')))?.value === String(server.store.resourceVersion),
    );
    first.reflector.stop();
    await first.running;
    // While it is down: one change. Then it comes back.
    server.store.apply(pod('shop', 'web-4', { app: 'web', tier: 'y' }, '10.0.0.5'));
    const revisions = async (): Promise<Map<string, number>> =>
      new Map((await store.range(layout.objects)).kvs.map((kv) => [kv.key, kv.modRevision]));
    const beforeRestart = await revisions();
    server.requests.length = 0;
    const second = await apiReflector(server, store, temp.dir, { elect: false });
    try {
      await converged(server, store);
      const lists = server.requests.filter((r) => r.verb === 'list' && r.path === '/api/v1/pods');
      assert.equal(lists.length, 0, 'resumed by watching from the recorded version');
      const watches = server.requests.filter((r) => r.verb === 'watch' && r.path === '/api/v1/pods');
      assert.ok(watches.length > 0 && watches[0]!.query.resourceVersion !== '0');
      // One object changed while down: only its key was written.
      const afterRestart = await revisions();
      const rewritten = [...afterRestart]
        .filter(([key, rev]) => beforeRestart.get(key) !== rev)
        .map(([key]) => key);
      assert.deepEqual(rewritten, [layout.key('Pod', 'shop', 'web-4')]);
    } finally {
      second.reflector.stop();
      await second.running;
    }
  });

  it('a recorded resourceVersion the server never reached (etcd restored from elsewhere): the server says too large, it lists again', async () => {
    const { store } = etcd;
    // The record says a version far ahead of the server's; meanwhile a pod changed.
    await store.txn([], [{ type: 'put', key: layout.resourceVersionKey('Pod'), value: '999999999' }]);
    server.store.apply(pod('shop', 'web-6', { app: 'web', tier: 'ahead' }, '10.0.0.7'));
    server.requests.length = 0;
    const { reflector, running } = await apiReflector(server, store, temp.dir, { elect: false });
    try {
      await converged(server, store);
      const pods = server.requests.filter((r) => r.path === '/api/v1/pods');
      assert.equal(pods[0]?.query.resourceVersion, '999999999', 'resumed from the record first');
      assert.ok(
        pods.some((r) => r.verb === 'list'),
        'listed again after the watch was refused as too large',
      );
    } finally {
      reflector.stop();
      await running;
    }
  });

  it('a reflector stopped between its transactions loses nothing: the version is recorded only with its last change', async () => {
    const { store } = etcd;
    const first = await apiReflector(server, store, temp.dir, { elect: false, maxOps: 2 });
    await converged(server, store);
    const before = (await store.range(layout.base)).revision;
    for (let i = 0; i < 20; i++)
      server.store.apply(pod('shop', `web-${i}`, { app: 'web', burst: 'yes' }, `10.0.0.${i + 1}`));
    // Stop it (dropping what it has not sent) as soon as its first transaction is in.
    await until(async () => (await store.range(layout.base)).revision > before, 10_000);
    first.reflector.stop({ now: true });
    await first.running;
    const second = await apiReflector(server, store, temp.dir, { elect: false, maxOps: 2 });
    try {
      await converged(server, store);
    } finally {
      second.reflector.stop();
      await second.running;
    }
  });

  it('bad objects from the API are diagnosed by their API path and not written; fixed, they are', async () => {
    const { store } = etcd;
    const log: string[] = [];
    const { reflector, running } = await apiReflector(server, store, temp.dir, { elect: false, log });
    try {
      const broken = policy('shop', 'broken', 'web');
      (broken.spec as { ingress: unknown[] }).ingress = [{ from: [{ ipBlock: { cidr: 'not-a-cidr' } }] }];
      server.store.apply(broken);
      await until(() => log.some((l) => l.includes('CIDR_INVALID')));
      assert.ok(
        log.some((l) =>
          l.includes(
            'error CIDR_INVALID /apis/networking.k8s.io/v1/namespaces/shop/networkpolicies/broken#spec',
          ),
        ),
      );
      assert.equal(await store.get(layout.key('NetworkPolicy', 'shop', 'broken')), undefined);
      server.store.apply(policy('shop', 'broken', 'web'));
      await converged(server, store);
      assert.ok(await store.get(layout.key('NetworkPolicy', 'shop', 'broken')));
    } finally {
      reflector.stop();
      await running;
    }
  });

  it('two reflectors: one leads; when it dies the other takes over within a few seconds', async () => {
    const { server: etcdServer } = etcd;
    const [storeA, storeB] = [
      await connectEtcd({ endpoints: [etcdServer.endpoint] }),
      await connectEtcd({ endpoints: [etcdServer.endpoint] }),
    ];
    const logA: string[] = [];
    const logB: string[] = [];
    const a = await apiReflector(server, storeA, temp.dir, { id: 'a', log: logA });
    await until(() => logA.includes('leading as a'));
    const b = await apiReflector(server, storeB, temp.dir, { id: 'b', log: logB });
    try {
      await until(() => logB.includes('following a'));
      await converged(server, storeB);
      // A dies: its client is gone and its lease is no longer kept alive.
      a.reflector.stop();
      storeA.close();
      const died = Date.now();
      server.store.apply(pod('shop', 'web-7', { app: 'web', after: 'failover' }, '10.0.0.8'));
      await until(() => logB.includes('leading as b'), 10_000);
      const took = Date.now() - died;
      assert.ok(took < 6000, `takeover took ${took} ms`);
      await converged(server, storeB);
    } finally {
      b.reflector.stop();
      await b.running;
      await a.running.catch(() => undefined);
      storeB.close();
    }
  });

  it('reflect -f PATH --watch: the files are the truth, followed as they change', async () => {
    const dir = join(temp.dir, 'manifests');
    mkdirSync(dir);
    copyFileSync('examples/shop/namespaces.yaml', join(dir, 'namespaces.yaml'));
    copyFileSync('examples/shop-running/pods.yaml', join(dir, 'pods.yaml'));
    const root = '/gitops';
    const once = await cli([
      'reflect',
      '--etcd',
      etcd.server.endpoint,
      '--prefix',
      root,
      '-f',
      dir,
      '--once',
    ]);
    assert.equal(once.code, 0, once.stderr);
    assert.match(once.stdout, /synced in .*: 11 keys, 11 written/);
    const keys = async (): Promise<string[]> =>
      (await etcd.store.range(`${root}/v1/k8s/`)).kvs.map((kv) => kv.key);
    assert.equal((await keys()).length, 11);
    // --watch in-process: the Reflector with a file source.
    const [{ Reflector }, { KeyLayout }] = await Promise.all([
      import('../../src/reflector/index.ts'),
      import('../../src/reflected/index.ts'),
    ]);
    const reflector = new Reflector({
      store: etcd.store,
      layout: new KeyLayout(root),
      source: { type: 'files', paths: [dir], watch: true },
      elect: false,
      log: () => undefined,
      onDiagnostics: () => undefined,
    });
    const running = reflector.run();
    try {
      writeFileSync(
        join(dir, 'namespaces.yaml'),
        'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n',
      );
      await until(async () => (await keys()).length === 8);
      assert.ok(!(await keys()).includes(`${root}/v1/k8s/namespace/payments`));
    } finally {
      reflector.stop();
      await running;
    }
  });

  it('manifests record a digest of each kind as its version: moved by deletions, unchanged by a no-op, never resumed from', async () => {
    const dir = join(temp.dir, 'content');
    mkdirSync(dir);
    const file = join(dir, 'cluster.yaml');
    const root = '/content';
    const versionKey = `${root}/v1/meta/reflector/resource-versions/networkpolicy`;
    const reflectFile = (objects: readonly object[]): Promise<void> =>
      reflectManifests(etcd.server.endpoint, root, file, objects);
    await reflectFile([namespace('shop'), policy('shop', 'a', 'web'), policy('shop', 'b', 'db')]);
    const first = await etcd.store.get(versionKey);
    assert.match(first?.value ?? '', /^content:/);
    await reflectFile([namespace('shop'), policy('shop', 'a', 'web')]);
    const deleted = await etcd.store.get(versionKey);
    assert.notEqual(deleted?.value, first?.value);
    // Recorded in the deletion's own transaction: the policy revision moved with it.
    assert.equal(
      (await etcd.store.lastModified(`${root}/v1/meta/reflector/`)).modRevision,
      deleted?.modRevision,
    );
    await reflectFile([namespace('shop'), policy('shop', 'a', 'web')]);
    assert.equal(
      (await etcd.store.get(versionKey))?.modRevision,
      deleted?.modRevision,
      'a no-op writes nothing',
    );
    // A reflector of the API taking over that prefix lists: a digest is no resourceVersion.
    const { EtcdWriter } = await import('../../src/reflector/index.ts');
    const { KeyLayout } = await import('../../src/reflected/index.ts');
    const writer = new EtcdWriter({ layout: new KeyLayout(root), store: etcd.store });
    await writer.load();
    assert.equal(writer.resourceVersion({ kind: 'NetworkPolicy' }), undefined);
  });

  it('reflect -f PATH without --once or --watch syncs once and exits, never following itself', async () => {
    const dir = namespacesDir('plain-f');
    const child = spawn(
      process.execPath,
      [...palisadeArgv(), 'reflect', '--etcd', etcd.server.endpoint, '--prefix', '/plain-f', '-f', dir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    // It used to re-campaign after syncing and print "following <itself>" every 3 s, forever.
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
    assert.equal(code, 0, output);
    assert.match(output, /synced in .*: 4 keys, 4 written/);
    assert.doesNotMatch(output, /following/);
    assert.equal(await etcd.store.get('/plain-f/v1/meta/reflector/leader'), undefined, 'it resigned');
  });

  it('a one-shot reflector gives up at its deadline, naming the leader that did not step down', async () => {
    const { Reflector, ReflectorTimeoutError } = await import('../../src/reflector/index.ts');
    const { KeyLayout } = await import('../../src/reflected/index.ts');
    const { campaign } = await import('../../src/etcd/index.ts');
    const keys = new KeyLayout('/deadline');
    const holder = await campaign(etcd.store, keys.leader, 'gitops-reflector', { ttlSeconds: 30 });
    try {
      const dir = namespacesDir('deadline');
      const logs: string[] = [];
      const reflector = new Reflector({
        store: etcd.store,
        layout: keys,
        source: { type: 'files', paths: [dir], watch: false },
        timeoutMs: 1500,
        log: (line) => logs.push(line),
        onDiagnostics: () => undefined,
      });
      const started = Date.now();
      await assert.rejects(reflector.run(), (error: Error) => {
        assert.ok(error instanceof ReflectorTimeoutError);
        assert.equal(
          error.message,
          'reflector gitops-reflector leads under /deadline/v1/meta/reflector/leader and did not step down within 1.5 s (stop it, or let it write the change)',
        );
        return true;
      });
      assert.ok(Date.now() - started < 10_000);
      assert.ok(logs.includes('following gitops-reflector'));
      assert.equal((await etcd.store.range(keys.objects)).kvs.length, 0, 'nothing written');
    } finally {
      await holder?.resign();
    }
  });

  it('a reflector finding its own id in the leader key waits for that lease, and does not say it follows itself', async () => {
    const [{ Reflector }, { KeyLayout }] = await Promise.all([
      import('../../src/reflector/index.ts'),
      import('../../src/reflected/index.ts'),
    ]);
    const { campaign } = await import('../../src/etcd/index.ts');
    const keys = new KeyLayout('/self');
    // An earlier run with the same id, its lease not expired yet.
    const earlier = await campaign(etcd.store, keys.leader, 'same-id', { ttlSeconds: 2 });
    const dir = namespacesDir('self');
    const logs: string[] = [];
    const running = new Reflector({
      store: etcd.store,
      layout: keys,
      id: 'same-id',
      source: { type: 'files', paths: [dir], watch: false },
      timeoutMs: 30_000,
      log: (line) => logs.push(line),
      onDiagnostics: () => undefined,
    }).run();
    await until(() => logs.some((l) => l.startsWith('the leader key holds')));
    // The earlier run's lease goes (revoked here; when a process died, it expires): this one leads.
    await earlier?.lease.revoke();
    await running;
    assert.ok(!logs.some((l) => l.startsWith('following')), logs.join('\n'));
    assert.ok(logs.some((l) => l.startsWith('synced')));
  });

  it('expected contents skip nothing by accident', () => {
    assert.ok(expectedContents(server).size > 30);
  });
});
