/**
 * The reflector's encode pool: a list page encoded in worker threads is exactly what encoding each
 * of its objects on the main thread gives (keys, values, digests, diagnostics, kinds that are not
 * reflected), for pages in flight at once; typed lists get their items' kind back; a page that is
 * not a list is a KubeApiError naming the list, as the client's own parsing says.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateShape } from '../../src/generate/shapes.ts';
import { KubeApiError } from '../../src/kube/index.ts';
import type { ServedResource } from '../../src/kube/types.ts';
import { startPageEncoder, type PageEncoder } from '../../src/reflector/encode-pool.ts';
import { encodeItem } from '../../src/reflector/page-encoder.ts';
import { apiPathOf } from '../../src/reflector/api-path.ts';
import { KeyLayout } from '../../src/reflected/index.ts';

const layout = new KeyLayout('/palisade');
const served: ServedResource[] = [
  {
    resource: {
      kind: 'Namespace',
      group: '',
      versions: ['v1'],
      plural: 'namespaces',
      namespaced: false,
      optional: false,
    },
    version: 'v1',
  },
  {
    resource: { kind: 'Pod', group: '', versions: ['v1'], plural: 'pods', namespaced: true, optional: false },
    version: 'v1',
  },
  {
    resource: {
      kind: 'NetworkPolicy',
      group: 'networking.k8s.io',
      versions: ['v1'],
      plural: 'networkpolicies',
      namespaced: true,
      optional: false,
    },
    version: 'v1',
  },
];

/** Invalid objects and one of a kind the reflector does not write, among valid ones. */
const ODD: Record<string, unknown>[] = [
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bad', namespace: 'x', labels: { 'no spaces!': 'v' } } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'x' }, data: {} },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'cidr', namespace: 'x' },
    spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
  },
];

function pages(): { text: string; objects: Record<string, unknown>[] }[] {
  const shape = generateShape('a', { scale: 0.005, seed: 11 });
  const all = [...shape.namespaces, ...shape.pods, ...shape.policies, ...ODD] as Record<string, unknown>[];
  const out = [];
  for (let i = 0; i < all.length; i += 97) {
    const objects = all.slice(i, i + 97);
    out.push({
      text: JSON.stringify({
        kind: 'List',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(i) },
        items: objects,
      }),
      objects,
    });
  }
  return out;
}

describe('the reflector encode pool', () => {
  const encoders: PageEncoder[] = [];
  after(async () => {
    for (const encoder of encoders) await encoder.close();
  });

  it('encodes pages in worker threads exactly as the main thread encodes each object', async () => {
    const threaded = startPageEncoder(layout, served, {
      threads: 2,
      onFallback: (reason) => assert.fail(reason),
    });
    encoders.push(threaded);
    assert.equal(threaded.threads, 2, 'the worker module is found beside the pool under tsx');
    const describeObject = apiPathOf(served);
    const input = pages();
    const results = await Promise.all(input.map((page, i) => threaded.encode(page.text, `/list/${i}`)));
    let invalid = 0;
    let skipped = 0;
    results.forEach((result, i) => {
      assert.equal(result.resourceVersion, String(i * 97));
      const expected = input[i]!.objects.map((o) => encodeItem(layout, o, describeObject(o)));
      assert.deepEqual(JSON.parse(JSON.stringify(result.items)), JSON.parse(JSON.stringify(expected)));
      for (const item of result.items) {
        if (item === null) skipped++;
        else if (item.value === undefined) invalid++;
        else assert.ok(item.digest && item.digest.length > 20, 'a valid value carries its digest');
      }
    });
    assert.equal(threaded.pagesInWorkers, input.length, 'every page was encoded by a worker');
    assert.equal(threaded.threads, 2, 'no worker stopped');
    assert.equal(skipped, 1, 'the ConfigMap is not a reflected kind');
    assert.equal(invalid, 2, 'the bad label key and the bad CIDR are not written');
  });

  it('gives a typed list’s items their kind and reads the continue token and remaining count', async () => {
    const encoder = startPageEncoder(layout, served, { threads: 1 });
    encoders.push(encoder);
    const text = JSON.stringify({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '42', continue: 'next', remainingItemCount: 7 },
      items: [
        { metadata: { name: 'a', namespace: 'shop', labels: { app: 'web' } }, status: { podIP: '10.0.0.1' } },
      ],
    });
    const page = await encoder.encode(text, '/api/v1/pods');
    assert.equal(page.continue, 'next');
    assert.equal(page.remainingItemCount, 7);
    assert.equal(page.items[0]?.key, '/palisade/v1/k8s/pod/shop/a');
    assert.match(page.items[0]?.value ?? '', /"kind":"Pod"/);
  });

  it('reports a page that is not a list as the API server’s fault, from a worker and inline alike', async () => {
    for (const threads of [1, 0]) {
      const encoder = startPageEncoder(layout, served, { threads });
      encoders.push(encoder);
      assert.equal(encoder.threads, threads);
      for (const [text, says] of [
        ['<html>', /is not JSON/],
        ['{"kind":"Status"}', /has no items/],
      ] as const) {
        await assert.rejects(encoder.encode(text, '/api/v1/pods'), (error: unknown) => {
          assert.ok(error instanceof KubeApiError);
          assert.equal(error.kind, 'server');
          assert.match(error.message, says);
          assert.match(error.message, /list \/api\/v1\/pods/);
          return true;
        });
      }
    }
  });
});
