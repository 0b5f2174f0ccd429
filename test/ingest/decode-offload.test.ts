/**
 * Pods decoded in a worker thread come back as the main thread decodes them: the compact form
 * carries every field of every kind of pod exactly, and a file holding anything else (another
 * kind, a diagnostic) is handed back to be decoded on the main thread.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { CompactPodWriter, readCompactPods } from '../../src/ingest/compact-pods.ts';
import { DecodeOffload } from '../../src/ingest/decode-offload.ts';
import { decodeObject } from '../../src/ingest/decode-object.ts';
import { readDocuments } from '../../src/ingest/parse-documents.ts';
import type { IdentifiedObject } from '../../src/ingest/build-cluster.ts';
import type { InputFile } from '../../src/ingest/types.ts';

const pod = (name: string, extra: { metadata?: object; spec?: object; status?: object } = {}): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels: { app: 'web', tier: name }, ...extra.metadata },
  spec: {
    nodeName: 'node-1',
    containers: [
      {
        name: 'c',
        ports: [
          { name: 'http', containerPort: 8080 },
          { containerPort: 53, protocol: 'UDP' },
        ],
      },
    ],
    ...extra.spec,
  },
  status: {
    phase: 'Running',
    podIP: '10.0.0.1',
    podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }],
    hostIP: '172.16.0.1',
    ...extra.status,
  },
});

const PODS: readonly object[] = [
  pod('a'),
  pod('b'),
  // No node, no labels, no ports; a host-network pod at its node's address; an owned pod; a pod
  // in the default namespace (its identity names it); the highest IPv4 address.
  pod('c', { metadata: { labels: {} }, spec: { nodeName: undefined, containers: [{ name: 'c' }] } }),
  pod('d', {
    spec: { hostNetwork: true },
    status: { podIP: undefined, podIPs: [], hostIPs: [{ ip: '172.16.0.9' }] },
  }),
  pod('e', { metadata: { ownerReferences: [{ kind: 'ReplicaSet', name: 'web-1', controller: true }] } }),
  { ...pod('f'), metadata: { name: 'f', labels: { app: 'web' } } },
  pod('g', { status: { podIP: '255.255.255.255', podIPs: [{ ip: '255.255.255.255' }] } }),
  // Port lists like the previous pod's but for a number, a protocol, a name, one more port.
  pod('h', {
    spec: {
      containers: [
        {
          name: 'c',
          ports: [
            { name: 'http', containerPort: 8081 },
            { containerPort: 53, protocol: 'UDP' },
          ],
        },
      ],
    },
  }),
  pod('i', {
    spec: {
      containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8081 }, { containerPort: 53 }] }],
    },
  }),
  pod('j', {
    spec: {
      containers: [{ name: 'c', ports: [{ name: 'web', containerPort: 8081 }, { containerPort: 53 }] }],
    },
  }),
  pod('k', {
    spec: {
      containers: [
        {
          name: 'c',
          ports: [{ name: 'web', containerPort: 8081 }, { containerPort: 53 }, { containerPort: 54 }],
        },
      ],
    },
  }),
];

const fileOf = (objects: readonly object[], name = 'pods.yaml'): InputFile => ({
  name,
  text: objects.map((o) => JSON.stringify(o)).join('\n---\n'),
});

/** What the main thread makes of a file: its decoded objects, or its diagnostics. */
function decodeHere(
  file: InputFile,
  defaultNamespace?: string,
): { objects: IdentifiedObject[]; diagnostics: number } {
  const objects: IdentifiedObject[] = [];
  let diagnostics = 0;
  const options = defaultNamespace === undefined ? {} : { defaultNamespace };
  diagnostics += readDocuments(file, {
    object: (raw) => {
      const outcome = decodeObject(raw, options);
      diagnostics += outcome.diagnostics.length;
      if (outcome.object && outcome.identity)
        objects.push({ identity: outcome.identity, object: outcome.object });
    },
    discard: () => (objects.length = 0),
  }).length;
  return { objects, diagnostics };
}

describe('compact pods', () => {
  it('read back exactly what was decoded, field order included', () => {
    const { objects, diagnostics } = decodeHere(fileOf(PODS), 'elsewhere');
    assert.equal(diagnostics, 0);
    assert.equal(objects.length, PODS.length);
    const writer = new CompactPodWriter();
    for (const { identity, object } of objects) assert.ok(writer.add(identity, object));
    const read = readCompactPods(writer.finish());
    assert.deepEqual(read, objects);
    // deepEqual does not see the order of fields: the JSON does.
    assert.equal(
      JSON.stringify(read, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
      JSON.stringify(objects, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
    );
    assert.ok(objects.some((o) => o.identity === 'Pod elsewhere/f'));
  });

  it("refuse a pod with a field the form does not carry, in it or in a port like the last pod's", () => {
    const { objects } = decodeHere(fileOf(PODS.slice(0, 2)));
    const [first, second] = objects;
    assert.ok(first && second && first.object.kind === 'Endpoint' && second.object.kind === 'Endpoint');
    const { endpoint } = second.object;
    const withExtraPortField = {
      ...second.object,
      endpoint: { ...endpoint, ports: endpoint.ports.map((p, i) => (i === 0 ? { ...p, hostPort: 1 } : p)) },
    };
    const withExtraField = { ...second.object, endpoint: { ...endpoint, extra: true } };
    for (const odd of [withExtraPortField, withExtraField]) {
      const writer = new CompactPodWriter();
      assert.ok(writer.add(first.identity, first.object));
      assert.equal(writer.add(second.identity, odd), false);
    }
  });

  it('refuse what is not a pod', () => {
    const [policy] = decodeHere(
      fileOf([
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'p', namespace: 'shop' },
          spec: { podSelector: {} },
        },
      ]),
    ).objects;
    assert.ok(policy);
    assert.equal(new CompactPodWriter().add(policy.identity, policy.object), false);
  });
});

describe('the decode offload', () => {
  const offload = DecodeOffload.create(0);
  after(() => offload?.close());

  it(
    'decodes a file of pods in the worker, as the main thread does',
    { skip: offload ? false : 'one core: no worker is started' },
    async () => {
      const file = fileOf(PODS);
      assert.ok(offload?.takes(file));
      const result = await offload?.decode(file, {});
      assert.deepEqual(result, decodeHere(file).objects);
    },
  );

  it(
    'hands back a file with another kind or a diagnostic',
    { skip: offload ? false : 'one core: no worker is started' },
    async () => {
      const mixed = fileOf([...PODS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } }]);
      assert.equal(await offload?.decode(mixed, {}), undefined);
      const broken = fileOf([pod('h', { status: { podIP: '10.0.0.300', podIPs: [{ ip: '10.0.0.300' }] } })]);
      assert.equal(await offload?.decode(broken, {}), undefined);
    },
  );

  it(
    'gives every file to the main thread once the worker has died, instead of waiting for it',
    { skip: offload ? false : 'one core: no worker is started' },
    async () => {
      const dying = DecodeOffload.create(0);
      assert.ok(dying);
      try {
        const file = fileOf(PODS);
        assert.deepEqual(await dying.decode(file, {}), decodeHere(file).objects);
        // The worker dies between two files (out of memory, say).
        await (dying as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
        let timer: NodeJS.Timeout | undefined;
        const next = await Promise.race([
          dying.decode(file, {}),
          new Promise((resolve) => (timer = setTimeout(() => resolve('still waiting'), 5000))),
        ]);
        clearTimeout(timer);
        assert.equal(next, undefined);
        assert.equal(dying.takes(file), false);
      } finally {
        await dying.close();
      }
    },
  );
});
