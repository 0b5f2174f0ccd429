/**
 * `palisade diff`, the set queries (equiv, contains, interferes) and `assert`, end to end on the
 * shop example and its next release (examples/shop-v2).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { loadStore, readManifests, tempDir, writeKubeconfig } from '../fake-apiserver/fixtures.ts';
import { cli } from '../helpers/cli.ts';

const V1 = ['-f', 'examples/shop'];
const V2 = [
  '--to',
  'examples/shop/namespaces.yaml',
  'examples/shop/workloads.yaml',
  'examples/shop/policies-payments.yaml',
  'examples/shop-v2',
];

describe('palisade diff', () => {
  it('names each changed connection with its ports and the policies it comes from; exit 1', async () => {
    const result = await cli(['diff', ...V1, ...V2]);
    assert.equal(result.code, 1);
    const lines = result.stdout.split('\n');
    assert.match(
      lines.find((l) => l.includes('prometheus')) ?? '',
      /^removed monitoring\/prometheus\[StatefulSet\] → shop\/api\[Deployment\] +TCP 9090 +\(NetworkPolicy shop\/api\)$/,
    );
    assert.match(
      lines.find((l) => l.includes('198.51.100.0/24')) ?? '',
      /^added +shop\/api\[Deployment\] → 198\.51\.100\.0\/24 +TCP 443/,
    );
    assert.match(
      lines.find((l) => l.includes('shop/db')) ?? '',
      /^added +shop\/frontend\[Deployment\] → shop\/db\[StatefulSet\] +TCP 5432 +\(NetworkPolicy shop\/db, NetworkPolicy shop\/frontend\)$/,
    );
    assert.match(result.stdout, /3 connections differ: 2 added, 1 removed, 0 changed\n$/);
    // --by pod: each running pod on its own (the frontend's two pods each reach the db).
    const running = ['-f', 'examples/shop-running', 'examples/shop'];
    const byPod = await cli([
      'diff',
      ...running,
      ...V2.slice(0, 1),
      'examples/shop-running',
      ...V2.slice(1),
      '--by',
      'pod',
    ]);
    assert.equal(byPod.code, 1, byPod.stderr);
    assert.equal(
      byPod.stdout.split('\n').filter((l) => /^added +shop\/frontend-[a-z0-9-]+ → shop\/db-0 /.test(l))
        .length,
      2,
    );
    assert.match(byPod.stdout, /4 connections differ: 3 added, 1 removed, 0 changed\n$/);
    const badView = await cli(['diff', ...V1, ...V2, '--by', 'node']);
    assert.equal(badView.code, 2);
    const one = await cli(['diff', ...V1, '--to', 'examples/shop', 'examples/shop-debug']);
    assert.match(one.stdout, /\n1 connection differs: 1 added, 0 removed, 0 changed\n$/);
  });

  it('--kubeconfig: the cluster against files, the same answer as the files against files', async () => {
    const temp = tempDir('diff-cluster');
    const server = new FakeApiServer({ token: 'diff-token' });
    try {
      const url = await server.start();
      loadStore(server.store, readManifests(readdirSync('examples/shop').map((f) => `examples/shop/${f}`)));
      const kubeconfig = writeKubeconfig(temp.dir, 'config', { server: url, token: 'diff-token' });
      const fromCluster = await cli(['diff', '--kubeconfig', kubeconfig, ...V2, '-o', 'json']);
      const fromFiles = await cli(['diff', ...V1, ...V2, '-o', 'json']);
      assert.equal(fromCluster.code, 1, fromCluster.stderr);
      // Object names are the same; only the reading time and the source differ.
      const strip = (text: string): unknown => {
        const doc = JSON.parse(text) as { connections: unknown[]; summary: unknown };
        return { connections: doc.connections, summary: doc.summary };
      };
      assert.deepEqual(strip(fromCluster.stdout), strip(fromFiles.stdout));
    } finally {
      await server.stop();
      temp.cleanup();
    }
  });

  it('exits 0 and says so when nothing differs', async () => {
    const result = await cli(['diff', ...V1, '--to', 'examples/shop']);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, 'no connection differs\n');
  });

  it('JSON: endpoints, changed objects, connections with ports as text and data, summary', async () => {
    const result = await cli(['diff', ...V1, ...V2, '-o', 'json']);
    const doc = JSON.parse(result.stdout) as {
      objects: { object: string; change: string }[];
      connections: Record<string, unknown>[];
      summary: Record<string, number>;
    };
    assert.deepEqual(doc.summary, { added: 2, removed: 1, changed: 0 });
    assert.deepEqual(doc.objects.map((o) => `${o.object} ${o.change}`).sort(), [
      'NetworkPolicy shop/api modified',
      'NetworkPolicy shop/db modified',
      'NetworkPolicy shop/frontend modified',
    ]);
    const db = doc.connections.find((c) => c.to === 'shop/db');
    assert.deepEqual(db, {
      from: 'shop/frontend',
      fromKind: 'Deployment',
      to: 'shop/db',
      toKind: 'StatefulSet',
      change: 'added',
      before: 'none',
      after: 'TCP 5432',
      beforePorts: {},
      afterPorts: { TCP: [[5432, 5432]] },
      causes: ['NetworkPolicy shop/db', 'NetworkPolicy shop/frontend'],
    });
  });

  it('CSV and Markdown give the same rows', async () => {
    const csv = await cli(['diff', ...V1, ...V2, '-o', 'csv']);
    assert.equal(csv.stdout.split('\n')[0], 'from,to,change,before,after,causes');
    assert.ok(
      csv.stdout.includes('shop/api[Deployment],198.51.100.0/24,added,none,TCP 443,NetworkPolicy shop/api'),
    );
    const md = await cli(['diff', ...V1, ...V2, '-o', 'md']);
    assert.match(md.stdout, /^\| from \| to \| change \|/);
    assert.equal(md.stdout.trim().split('\n').length, 2 + 3);
  });

  it('DOT: changed connections as coloured edges between workloads, namespaces as boxes', async () => {
    const dot = (await cli(['diff', ...V1, ...V2, '-o', 'dot'])).stdout;
    assert.match(dot, /^digraph palisade \{/);
    assert.match(dot, /subgraph cluster_\d+ \{\n {4}label="shop"/);
    assert.match(
      dot,
      /"ep:shop\/frontend\[Deployment\]" -> "ep:shop\/db\[StatefulSet\]" \[id="e\d+", label="\+ TCP 5432", color="#1a7f37"/,
    );
    assert.match(
      dot,
      /"ep:monitoring\/prometheus\[StatefulSet\]" -> "ep:shop\/api\[Deployment\]" \[id="e\d+", label="− TCP 9090", [^\]]*style=dashed/,
    );
    const byNamespace = (await cli(['diff', ...V1, ...V2, '-o', 'dot', '--group-by', 'namespace'])).stdout;
    assert.match(byNamespace, /"ns:shop" -> "ns:shop" \[id="e\d+", label="\+ TCP 5432"/);
  });
});

describe('palisade equiv, contains, interferes', () => {
  it('equiv: the same policies in another order are equivalent; the next release is not, with witnesses', async () => {
    const same = await cli([
      'equiv',
      '-f',
      'examples/shop',
      '--to',
      'examples/shop/policies-shop.yaml',
      'examples/shop/policies-payments.yaml',
    ]);
    assert.equal(same.code, 0, same.stdout);
    assert.match(same.stdout, /^equivalent/);
    const different = await cli(['equiv', ...V1, ...V2]);
    assert.equal(different.code, 1);
    assert.match(different.stdout, /^not equivalent: 3 pairs differ/);
    assert.match(
      different.stdout,
      /shop\/frontend\[Deployment\] → shop\/db\[StatefulSet\]: TCP 5432 \(first: none; second: TCP 5432\)/,
    );
  });

  it('contains: what the first allows and the second does not is the witness', async () => {
    const result = await cli(['contains', ...V1, ...V2, '-o', 'json']);
    assert.equal(result.code, 1);
    const doc = JSON.parse(result.stdout) as {
      holds: boolean;
      witnesses: { from: string; to: string; ports: string }[];
    };
    assert.equal(doc.holds, false);
    assert.deepEqual(
      doc.witnesses.map((w) => `${w.from} → ${w.to}: ${w.ports}`),
      ['monitoring/prometheus → shop/api: TCP 9090'],
    );
    // The other way round, the old release is contained in… nothing: it allows the scrape the new one drops.
    const reverse = await cli(['contains', '-f', ...V2.slice(1), '--to', 'examples/shop']);
    assert.equal(reverse.code, 1);
    assert.match(reverse.stdout, /shop\/frontend\[Deployment\] → shop\/db\[StatefulSet\]: TCP 5432/);
  });

  it('interferes: an extra policy widening what the first decides for its pods, and one that does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), `palisade-interferes-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const widen = join(dir, 'widen.yaml');
    writeFileSync(
      widen,
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: open-db, namespace: shop}\n' +
        'spec:\n  podSelector: {matchLabels: {app: db}}\n  ingress: [{}]\n',
    );
    const result = await cli(['interferes', ...V1, '--to', widen]);
    assert.equal(result.code, 1);
    // Sources whose own egress is open now reach the database on every port (api's egress still limits it).
    assert.match(
      result.stdout,
      /^interferes: with the second, 3 pairs the first's policies decide allow more/,
    );
    assert.match(result.stdout, /monitoring\/prometheus\[StatefulSet\] → shop\/db\[StatefulSet\]: \+all/);
    assert.match(result.stdout, /0\.0\.0\.0\/0 → shop\/db\[StatefulSet\]: \+all/);
    const harmless = join(dir, 'harmless.yaml');
    writeFileSync(
      harmless,
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: db-from-api, namespace: shop}\n' +
        'spec:\n  podSelector: {matchLabels: {app: db}}\n  ingress: [{from: [{podSelector: {matchLabels: {app: api}}}], ports: [{port: 5432}]}]\n',
    );
    const none = await cli(['interferes', ...V1, '--to', harmless]);
    assert.equal(none.code, 0, none.stdout);
    assert.match(none.stdout, /^does not interfere/);
  });
});

describe('palisade assert', () => {
  it('checks every expectation and explains each failure; exit 3 when one fails, whatever else the input holds', async () => {
    const ok = await cli([
      'assert',
      '-f',
      'examples/shop',
      '--expect',
      'examples/assert/shop-expectations.yaml',
    ]);
    assert.equal(ok.code, 0, ok.stdout);
    assert.match(ok.stdout, /5 expectations: 5 passed, 0 failed\n$/);
    const failing = await cli([
      'assert',
      ...V2.slice(1).flatMap((f, i) => (i === 0 ? ['-f', f] : [f])),
      '--expect',
      'examples/assert/shop-expectations.yaml',
    ]);
    assert.equal(failing.code, 3);
    assert.match(
      failing.stdout,
      /FAIL examples\/assert\/shop-expectations\.yaml:10:3: shop\/frontend → shop\/db TCP\/5432: expected denied, but it is allowed\n {2}egress {2}allow {2}allowed by shop\/frontend egress\[1\]/,
    );
    // A script tells a failed expectation (3) from an invalid object elsewhere in the input (1).
    const expectations = ['--expect', 'examples/assert/shop-expectations.yaml'];
    const broken = await cli(['assert', '-f', 'examples/shop', 'test/fixtures/broken.yaml', ...expectations]);
    assert.equal(broken.code, 1, broken.stdout);
    assert.match(broken.stdout, /5 expectations: 5 passed, 0 failed\n$/);
    const both = await cli([
      'assert',
      ...V2.slice(1).flatMap((f, i) => (i === 0 ? ['-f', f] : [f])),
      'test/fixtures/broken.yaml',
      ...expectations,
    ]);
    assert.equal(both.code, 3);
  });

  it('reports a bad expectations file with lines and columns (exit 2), and unknown names as failures', async () => {
    const dir = mkdtempSync(join(tmpdir(), `palisade-assert-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, '- from: shop/frontend\n  to: shop/api\n  prot: 80\n  allowed: yes-please\n');
    const result = await cli(['assert', '-f', 'examples/shop', '--expect', bad]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /bad\.yaml:3:3: unknown field "prot" \(did you mean "port"\?\)/);
    assert.match(result.stderr, /bad\.yaml:4:12: "allowed" must be true or false/);
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, '- {from: shop/frontnd, to: shop/api, port: 80, allowed: true}\n');
    const missing = await cli(['assert', '-f', 'examples/shop', '--expect', unknown]);
    assert.equal(missing.code, 3);
    assert.match(
      missing.stdout,
      /FAIL .*unknown\.yaml:1:3: shop\/frontnd → shop\/api TCP\/80: from: no pod or workload "shop\/frontnd"/,
    );
    // Names from the file are printed with their control characters escaped (no terminal escapes).
    const escape = String.fromCharCode(0x1b);
    const hostile = join(dir, 'hostile.yaml');
    writeFileSync(hostile, '- {from: "shop/\\e[2Jx", to: shop/api, port: 80, allowed: true}\n');
    const escaped = await cli(['assert', '-f', 'examples/shop', '--expect', hostile]);
    assert.equal(escaped.code, 3);
    assert.ok(!escaped.stdout.includes(escape), escaped.stdout);
    assert.match(escaped.stdout, /shop\/\\x1b\[2Jx → shop\/api/);
  });
});
