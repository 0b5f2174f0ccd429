/**
 * The analysis commands over a live cluster (the fake API server, with the official client
 * unmodified): the same output byte for byte as the same objects from files, pagination, scope,
 * absent and unknown CRDs, bad objects located by their API path, and every API failure as one
 * line with exit 2.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { FAKE_RESOURCES, FakeStore } from '../fake-apiserver/store.ts';
import {
  loadStore,
  readManifests,
  selfSignedCertificate,
  tempDir,
  writeKubeconfig,
} from '../fake-apiserver/fixtures.ts';
import { cli } from '../helpers/cli.ts';

const SHOP_FILES = [
  ...readdirSync('examples/shop-running').map((f) => `examples/shop-running/${f}`),
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
];
const TIERS = readdirSync('examples/tiers').map((f) => `examples/tiers/${f}`);

describe('analysis commands on a live cluster', () => {
  const temp = tempDir('cluster-input');
  const server = new FakeApiServer({ token: 'secret-token' });
  let kubeconfig = '';
  before(async () => {
    const url = await server.start();
    loadStore(server.store, readManifests([...SHOP_FILES, ...TIERS]));
    kubeconfig = writeKubeconfig(temp.dir, 'config', { server: url, token: 'secret-token' });
  });
  after(async () => {
    await server.stop();
    temp.cleanup();
  });

  const cases: [string, string[]][] = [
    ['matrix (port sets)', ['matrix']],
    ['matrix per port, JSON', ['matrix', '--port', '8000', '--port', '53/UDP', '-o', 'json']],
    ['matrix, compiled engine', ['matrix', '--port', '9090', '--engine', 'compiled']],
    [
      'check',
      ['check', '--from', 'shop/frontend-7c9d-x2k4p', '--to', 'shop/api-5f6b-m9w1c', '--port', 'http'],
    ],
    [
      'check, JSON',
      [
        'check',
        '--from',
        'payments/gateway-6d4f-b7n3v',
        '--to',
        '203.0.113.10',
        '--port',
        '443',
        '-o',
        'json',
      ],
    ],
    ['explain', ['explain', '--pod', 'monitoring/prometheus-0']],
    ['render nftables', ['render', '--target', 'nftables', '--node', 'node-1']],
  ];
  for (const [name, args] of cases) {
    it(`${name}: the same bytes as from files`, async () => {
      const fromFiles = await cli([...args, '-f', ...SHOP_FILES, ...TIERS]);
      const fromCluster = await cli([...args, '--kubeconfig', kubeconfig]);
      // Diagnostics name the object's API path instead of file:line:column; the rest is the same.
      const unlocated = (text: string): string => text.replace(/^\S+: (error|warning|info) /gm, '$1 ');
      assert.equal(unlocated(fromCluster.stderr), unlocated(fromFiles.stderr));
      assert.equal(fromCluster.code, fromFiles.code);
      assert.ok(fromFiles.stdout.length > 0);
      assert.equal(fromCluster.stdout, fromFiles.stdout);
    });
  }

  it('finds the cluster through KUBECONFIG when no option names it', async () => {
    const result = await cli(['matrix', '--port', '8000'], { env: { KUBECONFIG: kubeconfig } });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /shop\/frontend\[Deployment\] +X +X +X +\./);
  });

  it('-n reads only the given namespaces (one list per namespace, namespaces fetched one by one)', async () => {
    server.requests.length = 0;
    const fromFiles = await cli(['matrix', '--port', '8000', '-n', 'shop', '-f', ...SHOP_FILES]);
    const fromCluster = await cli(['matrix', '--port', '8000', '-n', 'shop', '--kubeconfig', kubeconfig]);
    assert.equal(fromCluster.stdout, fromFiles.stdout);
    const paths = server.requests.map((r) => `${r.verb} ${r.path}`);
    assert.ok(paths.includes('list /api/v1/namespaces/shop/pods'), paths.join('\n'));
    assert.ok(paths.includes('get /api/v1/namespaces/shop'));
    assert.ok(!paths.includes('list /api/v1/pods'));
    assert.ok(!paths.includes('list /api/v1/namespaces'));
  });

  it('lists in pages of at most 500 with limit', async () => {
    server.requests.length = 0;
    await cli(['validate', '--kubeconfig', kubeconfig]);
    const lists = server.requests.filter((r) => r.verb === 'list');
    assert.ok(lists.length >= 10);
    for (const r of lists) assert.equal(r.query.limit, '500');
  });

  it('shows a progress bar on a terminal only', async () => {
    const tty = await cli(['matrix', '--port', '80', '--kubeconfig', kubeconfig], { tty: true });
    assert.match(tty.stderr, /reading cluster \[#+/);
    const noColor = await cli(['matrix', '--port', '80', '--kubeconfig', kubeconfig], {
      tty: true,
      env: { NO_COLOR: '1' },
    });
    assert.doesNotMatch(noColor.stderr, /reading cluster/);
  });

  it('-f together with --kubeconfig or --context is a usage error', async () => {
    const both = await cli(['matrix', '-f', 'examples/shop', '--kubeconfig', kubeconfig]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /-f reads manifests and --kubeconfig reads a cluster/);
    const context = await cli(['matrix', '-f', 'examples/shop', '--context', 'x']);
    assert.equal(context.code, 2);
    const scopes = await cli(['matrix', '-A', '-n', 'shop', '--kubeconfig', kubeconfig]);
    assert.equal(scopes.code, 2);
    assert.match(scopes.stderr, /-A .* and -n .* exclude each other/);
  });

  it('without -f and without any kubeconfig says what to give, exit 2', async () => {
    const result = await cli(['matrix']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^palisade: no input: give -f PATH/);
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });

  it('401: rejected credentials are one line, exit 2', async () => {
    const wrong = writeKubeconfig(temp.dir, 'wrong', { server: server.serverUrl, token: 'stale' });
    const result = await cli(['matrix', '--kubeconfig', wrong]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^palisade: the API server at http:\/\/127\.0\.0\.1:\d+ rejected the credentials \(401 Unauthorized\)/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });

  it('403: names the verb and the resource that are missing, exit 2', async () => {
    server.forbidden.add('list networkpolicies');
    try {
      const result = await cli(['matrix', '--kubeconfig', kubeconfig]);
      assert.equal(result.code, 2);
      assert.match(
        result.stderr,
        /forbidden \(403\): user "tester" may not list networkpolicies \(API group networking\.k8s\.io\) at the cluster scope/,
      );
      assert.equal(result.stderr.trim().split('\n').length, 1);
    } finally {
      server.forbidden.clear();
    }
  });

  it('an unreachable server is one line, exit 2', async () => {
    const port = await closedPort();
    const nowhere = writeKubeconfig(temp.dir, 'nowhere', { server: `http://127.0.0.1:${port}`, token: 'x' });
    const result = await cli([
      'check',
      '--kubeconfig',
      nowhere,
      '--from',
      'a/b',
      '--to',
      'c/d',
      '--port',
      '80',
    ]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^palisade: cannot reach the API server at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)\n$/,
    );
  });

  it('a context that does not exist, or a kubeconfig that does not, is one line, exit 2', async () => {
    const context = await cli(['matrix', '--kubeconfig', kubeconfig, '--context', 'prod']);
    assert.equal(context.code, 2);
    assert.match(context.stderr, /context "prod" is not in .*config \(contexts: fake\)/);
    const missing = await cli(['matrix', '--kubeconfig', `${temp.dir}/nope`]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--kubeconfig .*nope: no such file/);
  });
});

describe('a cluster whose objects or CRDs are not what Palisade knows', () => {
  const temp = tempDir('cluster-odd');
  // AdminNetworkPolicy served only in a version Palisade does not know; no ClusterNetworkPolicy CRD.
  const resources = FAKE_RESOURCES.map((r) =>
    r.kind === 'AdminNetworkPolicy' ? { ...r, version: 'v1beta9' } : r,
  );
  const server = new FakeApiServer({ store: new FakeStore(resources) });
  let kubeconfig = '';
  before(async () => {
    server.store.absent.add('clusternetworkpolicies');
    const url = await server.start();
    loadStore(server.store, readManifests(SHOP_FILES));
    server.store.apply({
      apiVersion: 'policy.networking.k8s.io/v1beta9',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'future' },
      spec: { priority: 1, subject: { namespaces: {} }, ingress: [] },
    });
    server.store.apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'broken', namespace: 'shop' },
      spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
    });
    kubeconfig = writeKubeconfig(temp.dir, 'config', { server: url });
  });
  after(async () => {
    await server.stop();
    temp.cleanup();
  });

  it('diagnoses and skips them, locating each by its API path, and analyses the rest', async () => {
    const result = await cli(['validate', '--kubeconfig', kubeconfig, '-v']);
    assert.equal(result.code, 1);
    const lines = result.stdout + result.stderr;
    assert.match(
      lines,
      /\/apis\/networking\.k8s\.io\/v1\/namespaces\/shop\/networkpolicies\/broken#spec\.ingress\[0\]\.from\[0\]\.ipBlock\.cidr: error CIDR_INVALID/,
    );
    assert.match(
      lines,
      /\/apis\/policy\.networking\.k8s\.io\/v1beta9\/adminnetworkpolicies\/future#apiVersion: error API_VERSION_UNKNOWN/,
    );
    assert.match(lines, /info API_RESOURCE_ABSENT: the cluster does not serve ClusterNetworkPolicy/);
    assert.match(lines, /6 policies/);
  });

  it('an absent CRD alone is an info: exit 0', async () => {
    server.store.remove('NetworkPolicy', 'shop', 'broken');
    server.store.remove('AdminNetworkPolicy', undefined, 'future');
    const result = await cli(['matrix', '--port', '80', '--kubeconfig', kubeconfig]);
    assert.equal(result.code, 0, result.stderr);
  });
});

describe('TLS', () => {
  const temp = tempDir('cluster-tls');
  const tls = selfSignedCertificate(temp.dir);
  const server = tls ? new FakeApiServer({ tls, token: 't' }) : undefined;
  const skip = tls ? false : 'skipped: openssl is needed to make a test certificate';
  before(async () => {
    if (!server) return;
    await server.start();
    loadStore(server.store, readManifests(SHOP_FILES));
  });
  after(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it('a certificate the kubeconfig does not trust is one line, exit 2', { skip }, async () => {
    const untrusted = writeKubeconfig(temp.dir, 'untrusted', { server: server!.serverUrl, token: 't' });
    const result = await cli(['matrix', '--kubeconfig', untrusted]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^palisade: TLS: the certificate of https:\/\/127\.0\.0\.1:\d+ could not be verified \(DEPTH_ZERO_SELF_SIGNED_CERT\)/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });

  it('with its CA in the kubeconfig, HTTPS and a bearer token work', { skip }, async () => {
    const trusted = writeKubeconfig(temp.dir, 'trusted', {
      server: server!.serverUrl,
      token: 't',
      ca: tls!.cert,
    });
    const result = await cli(['matrix', '--port', '8000', '-n', 'shop', '--kubeconfig', trusted]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /shop\/frontend\[Deployment\] +\. +X/);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
