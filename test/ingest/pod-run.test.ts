/**
 * A large file holding a cluster — namespaces, pods, policies in one file — is cut around its run
 * of pods, which the worker decodes while the main thread decodes the rest: the pieces keep the
 * file's lines, and loading the file cut gives exactly the cluster and diagnostics of loading it
 * whole, a broken pod in the run, a problem before and after it, a policy inside it included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateShape } from '../../src/generate/shapes.ts';
import { loadCluster } from '../../src/ingest/load.ts';
import { podRunPieces } from '../../src/ingest/pod-run.ts';

const documents = (objects: readonly object[]): string =>
  objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';
const shape = generateShape('a', { scale: 0.002, seed: 9 });
const cluster = documents([...shape.namespaces, ...shape.pods, ...shape.policies]);

describe('a file cut around its pods', () => {
  it('gives the pods to the middle piece, the rest around it, each line where it was', () => {
    const pieces = podRunPieces({ name: 'all.yaml', text: cluster }, 0);
    assert.ok(pieces?.head && pieces.tail);
    const kinds = (text: string): string[] => [
      ...new Set([...text.matchAll(/"kind":"(\w+)"/g)].map((m) => m[1] as string)),
    ];
    assert.deepEqual(kinds(pieces.head.text), ['Namespace']);
    assert.deepEqual(
      kinds(pieces.pods.text).filter((k) => k !== 'ReplicaSet'),
      ['Pod'],
    );
    assert.deepEqual(kinds(pieces.tail.text), ['NetworkPolicy']);
    // Every piece, its leading empty lines standing for the file's, is the file's text there, line
    // for line; together they are the file.
    const lines = cluster.split('\n');
    for (const piece of [pieces.head, pieces.pods, pieces.tail]) {
      const own = piece.text.split('\n');
      const skipped = piece.text.length - piece.text.replace(/^\n*/, '').length;
      assert.deepEqual(own.slice(skipped, -1), lines.slice(skipped, own.length - 1));
      assert.equal(piece.name, 'all.yaml');
    }
    const trimmed = [pieces.head, pieces.pods, pieces.tail].map((p) => p.text.replace(/^\n*/, ''));
    assert.equal(trimmed.join(''), cluster);
  });

  it('is not cut when it is pods alone, a template, YAML, or its run of pods is short', () => {
    const pods = documents(shape.pods);
    assert.equal(podRunPieces({ name: 'p', text: pods }, 0), undefined);
    assert.equal(
      podRunPieces({ name: 't', text: cluster + '{"kind":"Pod","x":"{{ .Values.x }}"}\n' }, 0),
      undefined,
    );
    assert.equal(
      podRunPieces({ name: 'y', text: 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n' }, 0),
      undefined,
    );
    assert.equal(podRunPieces({ name: 'all', text: cluster }, cluster.length), undefined);
  });
});

describe('loading a file cut around its pods', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), `palisade-pod-run-${process.pid}-`));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The file loaded whole on this thread, and loaded with every large file offered to the worker. */
  const both = async (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    const whole = await loadCluster([path], { keepRawObjects: false, offloadBytes: Infinity });
    const cut = await loadCluster([path], { keepRawObjects: false, offloadBytes: statSync(path).size / 2 });
    return { whole, cut };
  };

  it(
    'gives the cluster and diagnostics of the file loaded whole',
    { skip: availableParallelism() < 2 ? 'one core: no worker is started' : false },
    async () => {
      const [firstPod, secondPod] = shape.pods as [Record<string, unknown>, Record<string, unknown>];
      const badPolicy = {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'bad', namespace: 'ns-1' },
        spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: 'not-a-cidr' } }] }] },
      };
      const brokenPod = { ...secondPod, metadata: { name: 'broken' }, status: { podIP: '10.0.0.300' } };
      const cases: Record<string, string> = {
        'cluster.yaml': cluster,
        // A problem before and after the run, and a broken pod in it (the worker gives it back).
        'problems.yaml': documents([
          badPolicy,
          ...shape.namespaces,
          ...shape.pods,
          brokenPod,
          ...shape.pods.slice(0, 3),
          ...shape.policies,
          { ...badPolicy, metadata: { name: 'bad2', namespace: 'ns-2' } },
        ]),
        // A policy in the middle of the pods: the longest run is cut around; a pod defined twice.
        'interrupted.yaml': documents([...shape.pods.slice(0, 5), badPolicy, ...shape.pods, firstPod]),
      };
      for (const [name, text] of Object.entries(cases)) {
        const { whole, cut } = await both(name, text);
        assert.deepEqual(cut.diagnostics, whole.diagnostics, name);
        assert.deepEqual(cut.cluster, whole.cluster, name);
        assert.ok(whole.cluster.endpoints.length > 0, name);
      }
      const { whole } = await both('problems.yaml', cases['problems.yaml'] as string);
      assert.ok(whole.diagnostics.filter((d) => d.code === 'CIDR_INVALID').length >= 2);
      assert.ok(whole.diagnostics.some((d) => d.severity === 'error' && d.message.includes('10.0.0.300')));
    },
  );
});
