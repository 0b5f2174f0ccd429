/**
 * Values the agent cannot read (issue 34, findings 2 and 3): invalid JSON, a value too large or
 * nested 200,000 levels deep, an object the decoders reject, one of another kind or naming
 * another object than its key. None throws, none stops the rest of its batch, none is taken for
 * a deletion: an existing key keeps its last good version, a new NetworkPolicy key isolates its
 * namespace (fail closed), and every such key is listed until a readable value or a delete
 * replaces it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterMirror, type KeyChange } from '../../src/agent/mirror.ts';
import { MAX_VALUE_CHARS, readValue } from '../../src/agent/decode.ts';
import { encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { namespace, pod, policy } from './helpers.ts';
import type { Raw } from '../helpers/builders.ts';

const layout = new KeyLayout('/u');
let revision = 1;

function put(object: Raw): KeyChange {
  const encoded = encodeObject(layout, object, 'test');
  assert.ok(encoded.value, JSON.stringify(encoded.diagnostics));
  return { key: encoded.key, value: encoded.value, modRevision: revision++ };
}
/** `object`'s key with `value` written as it is. */
function raw(object: Raw, value: string): KeyChange {
  return { key: encodeObject(layout, object, 'test').key, value, modRevision: revision++ };
}
function del(object: Raw): KeyChange {
  return { key: encodeObject(layout, object, 'test').key, value: undefined, modRevision: revision++ };
}
const deep = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

/** Hostile values, each with the reason's start. */
const HOSTILE: [string, (key: Raw) => string, RegExp][] = [
  [
    'truncated JSON',
    () => '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"na',
    /not valid JSON/,
  ],
  ['a value nested 200,000 levels', () => deep(200_000), /nested deeper than 64 levels/],
  ['a value larger than the limit', () => `{"x":"${'a'.repeat(MAX_VALUE_CHARS)}"}`, /more than the/],
  ['a JSON array', () => '[1,2,3]', /not a JSON object/],
  [
    'an object the decoders reject',
    (o) => JSON.stringify({ ...o, spec: { podSelector: { matchLabels: { app: 7 } } } }),
    /SCHEMA_TYPE|must be/,
  ],
  [
    'an object of another kind',
    () => JSON.stringify(namespace('shop')),
    /is a Namespace, not a NetworkPolicy/,
  ],
  [
    'an object naming another policy',
    () => JSON.stringify(policy('shop', 'other', { app: 'db' }, { app: 'web' })),
    /names shop\/other, not the key's shop\/db-from-web/,
  ],
];

describe('values the agent cannot read', () => {
  const base = (): Raw[] => [
    namespace('shop'),
    pod('shop', 'web', '10.0.0.1', 'n1', { app: 'web' }),
    pod('shop', 'db', '10.0.0.2', 'n1', { app: 'db' }),
    policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 5432),
  ];

  for (const [what, value, reason] of HOSTILE)
    it(`${what}: a policy keeps its last good version, and says why`, () => {
      const mirror = new ClusterMirror({ layout, node: 'n1' });
      const objects = base();
      mirror.apply(objects.map(put));
      const before = mirror.snapshot().policies;
      const bad = raw(objects[3]!, value(objects[3]!));
      // In one batch with a good change: the good one goes through.
      const out = mirror.apply([bad, put(pod('shop', 'web', '10.0.0.1', 'n1', { app: 'web', v: '2' }))]);
      assert.deepEqual(mirror.snapshot().policies, before, 'the policy is neither dropped nor changed');
      assert.ok(
        out.some((c) => c.type === 'upsert-pod'),
        'the rest of the batch is applied',
      );
      assert.ok(!out.some((c) => c.type === 'delete-policy'), 'no delete of the policy');
      const [listed] = mirror.unreadable();
      assert.equal(listed?.key, bad.key);
      assert.equal(listed?.kept, 'last-good');
      assert.match(listed.reason, reason);
      // A readable value replaces the record.
      mirror.apply([put(policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 6543))]);
      assert.deepEqual(mirror.unreadable(), []);
    });

  it('a new NetworkPolicy key that cannot be read isolates its whole namespace both ways', () => {
    const mirror = new ClusterMirror({ layout, node: 'n1' });
    mirror.apply(base().slice(0, 3).map(put));
    const fresh = policy('shop', 'deny-some', { app: 'db' }, { app: 'web' });
    mirror.apply([raw(fresh, deep(1000))]);
    const standIn = mirror.snapshot().policies.find((p) => p.name === 'deny-some');
    assert.ok(standIn, 'a stand-in stands at the key');
    assert.equal(standIn.podSelector.requirements.length, 0, 'it selects every pod of the namespace');
    assert.deepEqual([standIn.affectsIngress, standIn.affectsEgress], [true, true]);
    assert.deepEqual([standIn.ingress.length, standIn.egress.length], [0, 0]);
    assert.equal(mirror.unreadable()[0]?.kept, 'fail-closed');
    // The first readable value replaces it; a delete removes it and the record.
    mirror.apply([put(fresh)]);
    assert.equal(mirror.snapshot().policies.find((p) => p.name === 'deny-some')?.podSelector.key, 'app=db');
    mirror.apply([raw(fresh, 'nope')]);
    assert.equal(mirror.unreadable()[0]?.kept, 'last-good');
    mirror.apply([del(fresh)]);
    assert.equal(
      mirror.snapshot().policies.find((p) => p.name === 'deny-some'),
      undefined,
    );
    assert.deepEqual(mirror.unreadable(), []);
  });

  it('a staged policy whose value cannot be read stays staged: nothing enforced, nothing isolated', () => {
    const mirror = new ClusterMirror({ layout, node: 'n1' });
    mirror.apply(base().slice(0, 3).map(put));
    const candidate = policy('shop', 'candidate', { app: 'db' }, { app: 'web' });
    const staged: Raw = {
      ...candidate,
      metadata: { ...(candidate.metadata as Raw), annotations: { 'palisade.dev/staged': 'true' } },
    };
    assert.deepEqual(mirror.apply([put(staged)]), []);
    const before = mirror.snapshot();
    assert.deepEqual(
      before.staged?.policies.map((p) => p.name),
      ['candidate'],
    );
    assert.deepEqual(mirror.apply([raw(staged, deep(1000))]), [], 'no stand-in reaches the pipeline');
    assert.deepEqual(mirror.snapshot().staged, before.staged);
    assert.deepEqual(mirror.snapshot().policies, before.policies);
    assert.equal(mirror.unreadable()[0]?.kept, 'last-good');
    // Its mark removed: enforced as if created.
    const out = mirror.apply([put(candidate)]);
    assert.deepEqual(
      out.map((c) => c.type),
      ['upsert-policy'],
    );
    assert.equal(mirror.snapshot().staged, undefined);
  });

  it('a pod, a namespace and a cluster policy keep their last good versions; new ones are left out', () => {
    const mirror = new ClusterMirror({ layout, node: 'n1' });
    const objects = base();
    mirror.apply(objects.map(put));
    const before = mirror.snapshot();
    const anp: Raw = {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'deny-web' },
      spec: {
        priority: 10,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      },
    };
    mirror.apply([put(anp)]);
    const withAnp = mirror.snapshot();
    assert.equal(withAnp.clusterPolicies.length, 1);
    const out = mirror.apply([
      raw(objects[0]!, deep(100)),
      raw(objects[1]!, '{'),
      raw(anp, JSON.stringify({ ...anp, spec: { priority: 'high' } })),
      raw(pod('shop', 'new', '10.0.0.9', 'n1', {}), 'null'),
    ]);
    assert.deepEqual(out, [], 'nothing changes in the pipeline');
    const after = mirror.snapshot();
    assert.deepEqual(after.endpoints, before.endpoints);
    assert.deepEqual([...after.namespaces], [...before.namespaces]);
    assert.deepEqual(after.clusterPolicies, withAnp.clusterPolicies);
    assert.deepEqual(
      mirror.unreadable().map((u) => [u.key.split('/').slice(-2).join('/'), u.kept]),
      [
        ['adminnetworkpolicy/deny-web', 'last-good'],
        ['namespace/shop', 'last-good'],
        ['shop/new', 'left-out'],
        ['shop/web', 'last-good'],
      ],
    );
  });

  it('readValue never throws, and reads what the reflector writes', () => {
    // The values no decoder could make an object of (kind and name are the mirror's checks).
    for (const [, value] of HOSTILE.slice(0, 4)) {
      const read = readValue('/u/v1/k8s/pod/shop/x', value(pod('shop', 'x', '10.0.0.1', 'n1', {})));
      assert.equal(read.ok, false);
    }
    const good = put(pod('shop', 'x', '10.0.0.1', 'n1', {}));
    assert.equal(readValue(good.key, good.value!).ok, true);
  });
});
