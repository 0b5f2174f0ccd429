/**
 * The value codec: an object reduced for etcd decodes to the same model object as the original
 * (for every object of the examples, the fixtures, the conformance corpora and generated shapes,
 * each also with random fields policy does not read added), and such fields never change the
 * value — so churn writes nothing. Also the key layout's round trip.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { generateShape } from '../../src/generate/shapes.ts';
import { decodeObject } from '../../src/ingest/index.ts';
import { objectLocator } from '../../src/kube/index.ts';
import { KeyLayout, decodeValue, encodeObject, REFLECTED_KINDS } from '../../src/reflected/index.ts';
import { readManifests } from '../fake-apiserver/fixtures.ts';

const layout = new KeyLayout('/palisade');
const REFLECTED = new Set(REFLECTED_KINDS.map((k) => k.kind));

/**
 * Every manifest under `root`; none when it is absent (the shared conformance corpora sit beside
 * the repository on the developers' machines, not in every clone).
 */
function manifestFiles(root: string): string[] {
  if (!existsSync(root)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(root)) {
    const path = join(root, entry);
    if (statSync(path).isDirectory()) out.push(...manifestFiles(path));
    else if (/\.(ya?ml|json)$/.test(entry)) out.push(path);
  }
  return out;
}

function corpus(): Record<string, unknown>[] {
  const files = [
    ...manifestFiles('examples'),
    ...manifestFiles('test/fixtures'),
    ...manifestFiles('../shared/conformance'),
  ];
  const objects: Record<string, unknown>[] = [];
  for (const file of files) {
    try {
      objects.push(...readManifests([file]));
    } catch {
      // files that are not manifests (broken on purpose, or expectations)
    }
  }
  objects.push(...HANDMADE);
  const shape = generateShape('a', { scale: 0.004, seed: 3 });
  objects.push(...shape.namespaces, ...shape.pods, ...shape.policies);
  return objects.filter((o) => o && typeof o === 'object' && REFLECTED.has(o.kind as string));
}

/** Objects with the fields the corpora rarely have: host network, sidecars, dual stack, owners… */
const HANDMADE: Record<string, unknown>[] = [
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'host', namespace: 'kube-system', labels: { app: 'agent' } },
    spec: {
      hostNetwork: true,
      nodeName: 'n1',
      containers: [{ name: 'a', ports: [{ containerPort: 9100, protocol: 'TCP' }] }],
    },
    status: { phase: 'Running', hostIP: '192.168.0.1', hostIPs: [{ ip: '192.168.0.1' }, { ip: 'fd00::1' }] },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'mesh',
      namespace: 'shop',
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true },
      ],
    },
    spec: {
      initContainers: [
        {
          name: 'proxy',
          restartPolicy: 'Always',
          ports: [{ name: 'envoy', containerPort: 15001, protocol: 'TCP' }],
        },
        { name: 'init', ports: [{ containerPort: 1 }] },
      ],
      containers: [{ name: 'app', ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }] }],
    },
    status: { phase: 'Pending', podIPs: [{ ip: '10.0.0.9' }, { ip: 'fd00::9' }] },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'done', namespace: 'shop' },
    status: { phase: 'Succeeded', podIP: '10.0.0.10' },
  },
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: 'legacy',
      annotations: { 'net.beta.kubernetes.io/network-policy': '{"ingress":{"isolation":"DefaultDeny"}}' },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', labels: { zone: 'a' } },
    status: {
      addresses: [
        { type: 'InternalIP', address: '192.168.0.1' },
        { type: 'Hostname', address: 'n1' },
        { type: 'ExternalIP', address: '203.0.113.1' },
      ],
    },
  },
  {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: 'cron', namespace: 'shop' },
    spec: {
      jobTemplate: {
        spec: {
          template: {
            metadata: { labels: { app: 'cron' } },
            spec: { containers: [{ name: 'c', ports: [{ name: 'm', containerPort: 8080 }] }] },
          },
        },
      },
    },
  },
  {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'ds', namespace: 'kube-system', labels: { own: 'label' } },
    spec: {
      template: {
        metadata: { labels: { app: 'ds' } },
        spec: { hostNetwork: true, containers: [{ name: 'c' }] },
      },
    },
    status: { numberReady: 3 },
  },
];

/** The model object without where it came from. */
function unlocated(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (key, v: unknown) =>
      key === 'location' ? undefined : typeof v === 'bigint' ? `${v}n` : v,
    ),
  );
}

const OBJECTS = corpus();

describe('the value codec', () => {
  it(`decodes a reduced object to the same model object as the original (${OBJECTS.length} objects)`, () => {
    let written = 0;
    for (const object of OBJECTS) {
      const original = decodeObject({ value: object, file: 'x', basePath: [], locator: objectLocator('x') });
      const encoded = encodeObject(layout, object, 'x');
      if (!original.object) {
        assert.equal(encoded.value, undefined, 'an object that does not decode is not written');
        continue;
      }
      written++;
      const back = decodeValue(encoded.key, encoded.value!);
      assert.deepEqual(unlocated(back.object), unlocated(original.object), encoded.key);
      // Warnings survive the round trip too (an agent sees what the reflector saw).
      assert.deepEqual(
        back.diagnostics.map((d) => d.code),
        original.diagnostics.map((d) => d.code),
      );
    }
    assert.ok(written > 100);
  });

  it('fields policy does not read never change the value', () => {
    const junk = fc.record({
      resourceVersion: fc.string(),
      managedFields: fc.array(fc.object(), { maxLength: 2 }),
      annotation: fc.string(),
      conditions: fc.array(fc.record({ type: fc.string(), status: fc.constantFrom('True', 'False') }), {
        maxLength: 3,
      }),
      restarts: fc.nat(),
      replicas: fc.nat(),
      image: fc.string(),
    });
    fc.assert(
      fc.property(fc.constantFrom(...OBJECTS), junk, (object, j) => {
        const plain = encodeObject(layout, object, 'x').value;
        const metadata = (object.metadata ?? {}) as Record<string, unknown>;
        const noisy: Record<string, unknown> = {
          ...object,
          metadata: {
            ...metadata,
            resourceVersion: j.resourceVersion,
            managedFields: j.managedFields,
            annotations: {
              ...((metadata.annotations as object | undefined) ?? {}),
              'example.com/noise': j.annotation,
            },
          },
          status: {
            ...(object.status ?? {}),
            conditions: j.conditions,
            containerStatuses: [{ name: 'c', restartCount: j.restarts }],
            replicas: j.replicas,
          },
        };
        assert.equal(encodeObject(layout, noisy, 'x').value, plain);
      }),
      { numRuns: Number(process.env.PALISADE_PROPERTY_RUNS ?? 200) },
    );
  });

  it('keys round-trip through the layout, namespaced and cluster-scoped', () => {
    assert.equal(layout.key('Pod', 'shop', 'web-1'), '/palisade/v1/k8s/pod/shop/web-1');
    assert.equal(layout.key('Namespace', undefined, 'shop'), '/palisade/v1/k8s/namespace/shop');
    assert.equal(
      layout.key('ClusterNetworkPolicy', 'ignored', 'x'),
      '/palisade/v1/k8s/clusternetworkpolicy/x',
    );
    for (const { kind, namespaced } of REFLECTED_KINDS) {
      const key = layout.key(kind, 'ns', 'name');
      assert.deepEqual(
        layout.parse(key),
        namespaced ? { kind, namespace: 'ns', name: 'name' } : { kind, name: 'name' },
      );
    }
    assert.equal(layout.parse('/palisade/v1/meta/reflector/leader'), undefined);
    assert.equal(
      layout.resourceVersionKey('Pod', 'shop'),
      '/palisade/v1/meta/reflector/resource-versions/pod/shop',
    );
  });
});
