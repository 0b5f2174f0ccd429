/**
 * Loading without keeping the parsed objects (each file's text and documents dropped once
 * decoded) gives exactly the cluster and diagnostics of loading with them kept: the same
 * objects, the same located problems, the same duplicate resolution across files.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateShape } from '../../src/generate/shapes.ts';
import { loadCluster } from '../../src/ingest/load.ts';

let dir = '';
const write = (name: string, objects: readonly object[]): void =>
  writeFileSync(join(dir, name), objects.map((o) => JSON.stringify(o)).join('\n---\n'));

before(() => {
  dir = mkdtempSync(join(tmpdir(), `palisade-drop-raw-${process.pid}-`));
  const shape = generateShape('a', { scale: 0.002, seed: 5 });
  write('a-namespaces.yaml', shape.namespaces);
  write('b-pods.yaml', shape.pods);
  write('c-policies.yaml', shape.policies);
  // Problems the loader must report the same way: a bad CIDR, a duplicate across files, YAML.
  writeFileSync(
    join(dir, 'd-broken.yaml'),
    [
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad, namespace: ns-1}\nspec:\n  podSelector: {}\n  ingress:\n  - from:\n    - ipBlock: {cidr: not-a-cidr}',
      JSON.stringify(shape.pods[0]),
      'kind: [unclosed',
    ].join('\n---\n'),
  );
  // What main's reader skips or locates before parsing: bytes that are not UTF-8, a Helm
  // chart's metadata, a discovered file with no Kubernetes object, an unrendered template.
  writeFileSync(
    join(dir, 'e-latin1.yaml'),
    Buffer.from('apiVersion: v1\nkind: Namespace\nmetadata: {name: caf\xe9}\n', 'latin1'),
  );
  writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: shop\nversion: 0.1.0\n');
  writeFileSync(join(dir, 'f-settings.json'), '{"editor": {"tabSize": 2}}');
  writeFileSync(
    join(dir, 'g-template.yaml'),
    'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Values.ns }}\n',
  );
  // More broken objects of one code than are listed per file: the bound is per file and code.
  const broken = Array.from({ length: 1_050 }, () => ({ apiVersion: 'v1', kind: 'Pod', metadata: {} }));
  write('h-many-broken.yaml', [{ apiVersion: 'v1', kind: 'List', items: broken }]);
  // A namespace-less policy, read into the namespace -n names.
  writeFileSync(
    join(dir, 'i-no-namespace.yaml'),
    'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: loose}\nspec: {podSelector: {}}\n',
  );
});

after(() => rmSync(dir, { recursive: true, force: true }));

describe('loading without the parsed objects', () => {
  it('gives the same cluster and diagnostics as loading with them kept', async () => {
    const kept = await loadCluster([dir]);
    const dropped = await loadCluster([dir], { keepRawObjects: false });
    assert.deepEqual(dropped.diagnostics, kept.diagnostics);
    assert.deepEqual(dropped.cluster, kept.cluster);
    assert.ok(kept.diagnostics.some((d) => d.code === 'CIDR_INVALID'));
    assert.ok(kept.diagnostics.some((d) => d.code === 'YAML_SYNTAX'));
    for (const code of ['INVALID_UTF8', 'NOT_KUBERNETES', 'TEMPLATE_NOT_RENDERED', 'DIAGNOSTICS_TRUNCATED'])
      assert.ok(
        kept.diagnostics.some((d) => d.code === code),
        code,
      );
    assert.ok((kept.cluster.rejectedPolicies ?? []).length > 0);
    assert.ok(kept.rawObjects.length > 0);
    assert.equal(dropped.rawObjects.length, 0);
  });

  it('the same with files decoded in a worker thread', async () => {
    // Every file offered to it (most come back to be decoded here: they are not all pods), and
    // only the file of pods, which it decodes while this thread reads the others.
    const podsFile = statSync(join(dir, 'b-pods.yaml')).size;
    for (const offloadBytes of [0, podsFile]) {
      for (const options of [{}, { defaultNamespace: 'ns-1', semantics: 'deferred' } as const]) {
        const kept = await loadCluster([dir], options);
        const offloaded = await loadCluster([dir], { ...options, keepRawObjects: false, offloadBytes });
        assert.deepEqual(offloaded.diagnostics, kept.diagnostics);
        assert.deepEqual(offloaded.cluster, kept.cluster);
      }
    }
    // A lone large file has nothing to overlap with: it is read here, and read whole.
    const lone = join(dir, 'b-pods.yaml');
    const kept = await loadCluster([lone]);
    const alone = await loadCluster([lone], { keepRawObjects: false, offloadBytes: 0 });
    assert.deepEqual(alone.cluster, kept.cluster);
    assert.ok(kept.cluster.endpoints.length > 0);
  });

  it('the same with a default namespace and deferred semantics', async () => {
    const options = { defaultNamespace: 'ns-1', semantics: 'deferred' } as const;
    const kept = await loadCluster([dir], options);
    const dropped = await loadCluster([dir], { ...options, keepRawObjects: false });
    assert.deepEqual(dropped.diagnostics, kept.diagnostics);
    assert.deepEqual(dropped.cluster, kept.cluster);
    assert.ok(kept.cluster.policies.some((p) => p.name === 'loose' && p.namespace === 'ns-1'));
  });
});
