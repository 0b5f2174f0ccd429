/**
 * The hand-written NetworkPolicy, Pod and Namespace checks (decode-shapes.ts) vouch for exactly
 * what their zod schemas accept from JSON, and for those the object read as it is equals what zod
 * gives back: random objects of each kind (well-formed parts mixed with any JSON value, unknown
 * keys, missing fields) are held to zod, and a generated cluster's objects all take the fast path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  asParsed,
  field,
  hasProtoKey,
  metadata,
  numberish,
  objectOf,
  oneDeepChange,
  selector,
  text,
} from '../helpers/shape-arbitraries.ts';
import { generateShape } from '../../src/generate/shapes.ts';
import { plainNamespace, plainNetworkPolicy, plainPod } from '../../src/ingest/decode-shapes.ts';
import { namespaceSchema, networkPolicySchema, podSchema } from '../../src/ingest/schemas.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 300);

const peer = objectOf({
  podSelector: field(selector),
  namespaceSelector: field(selector),
  ipBlock: field(
    objectOf({ cidr: field(text), except: field(fc.array(field(text), { maxLength: 2 })) }, ['cidr']),
  ),
});
const ports = fc.array(
  objectOf({ protocol: field(text), port: field(fc.oneof(numberish, text)), endPort: field(numberish) }),
  { maxLength: 2 },
);
const policy = objectOf(
  {
    apiVersion: field(fc.constantFrom('networking.k8s.io/v1', 'extensions/v1beta1')),
    kind: field(fc.constantFrom('NetworkPolicy', 'NetworkPolicy', 'NetworkPolicy', 'Pod')),
    metadata: field(metadata),
    spec: field(
      objectOf({
        podSelector: field(selector),
        policyTypes: field(fc.array(field(fc.constantFrom('Ingress', 'Egress')), { maxLength: 2 })),
        ingress: field(
          fc.array(objectOf({ from: field(fc.array(peer, { maxLength: 2 })), ports: field(ports) })),
        ),
        egress: field(
          fc.array(objectOf({ to: field(fc.array(peer, { maxLength: 2 })), ports: field(ports) })),
        ),
      }),
    ),
    status: field(fc.jsonValue({ maxDepth: 1 })),
  },
  ['apiVersion', 'kind', 'metadata'],
);

const containerPort = objectOf(
  { name: field(text), containerPort: field(numberish), protocol: field(text), hostPort: field(numberish) },
  ['containerPort'],
);
const container = objectOf({
  name: field(text),
  ports: field(fc.array(containerPort, { maxLength: 2 })),
  restartPolicy: field(text),
});
const ipEntry = objectOf({ ip: field(text) }, ['ip']);
const pod = objectOf(
  {
    apiVersion: field(fc.constant('v1')),
    kind: field(fc.constant('Pod')),
    metadata: field(metadata),
    spec: field(
      objectOf({
        containers: field(fc.array(container, { maxLength: 2 })),
        initContainers: field(fc.array(container, { maxLength: 1 })),
        hostNetwork: field(fc.boolean()),
        nodeName: field(text),
      }),
    ),
    status: field(
      objectOf({
        phase: field(text),
        podIP: field(text),
        podIPs: field(fc.array(ipEntry, { maxLength: 2 })),
        hostIP: field(text),
        hostIPs: field(fc.array(ipEntry, { maxLength: 1 })),
      }),
    ),
  },
  ['metadata'],
);
const namespace = objectOf({ apiVersion: field(fc.constant('v1')), metadata: field(metadata) }, ['metadata']);

/** Holds a check to its schema on random objects of its kind; returns how many it vouched for. */
function holdsToZod(
  arbitrary: fc.Arbitrary<unknown>,
  check: (value: unknown) => unknown,
  schema: { safeParse(value: unknown): { success: boolean; data?: unknown } },
): void {
  let vouched = 0;
  let tried = 0;
  fc.assert(
    fc.property(arbitrary, (generated) => {
      const value = asParsed(generated);
      tried++;
      const plain = check(value);
      const parsed = schema.safeParse(value);
      // For what JSON gives, exactly zod's answer: no well-formed object misses the fast path.
      // A `__proto__` key is the exception: the checks leave one to zod where they look (zod
      // drops it from a record or a loose object, unchecked; decode-labels.ts judges a label's),
      // and pass one in a field nobody reads (status, metadata.uid) as zod does.
      if (hasProtoKey(value)) assert.ok(plain === undefined || parsed.success);
      else assert.equal(plain !== undefined, parsed.success);
      if (plain === undefined) return;
      vouched++;
      assert.deepStrictEqual(parsed.data, plain);
      assert.equal(plain, value, 'the object is read as it is');
    }),
    { numRuns: RUNS },
  );
  // Not vacuous: a fair share of the random objects is well-formed.
  assert.ok(vouched > tried / 20, `only ${vouched} of ${tried} vouched for`);
}

describe('one change deep inside a well-formed object', () => {
  it('each check still vouches for exactly what zod accepts', () => {
    holdsToZod(oneDeepChange(policy, networkPolicySchema), plainNetworkPolicy, networkPolicySchema);
    holdsToZod(oneDeepChange(pod, podSchema), plainPod, podSchema);
    holdsToZod(oneDeepChange(namespace, namespaceSchema), plainNamespace, namespaceSchema);
  });
});

describe('Pod and Namespace shape checks', () => {
  it('the Pod check vouches for exactly what zod accepts, and reads it as it is', () => {
    holdsToZod(pod, plainPod, podSchema);
  });
  it('the Namespace check vouches for exactly what zod accepts, and reads it as it is', () => {
    holdsToZod(namespace, plainNamespace, namespaceSchema);
  });
  it('takes every pod and namespace of a generated cluster as it is', () => {
    const { pods, namespaces } = generateShape('a', { scale: 0.01, seed: 3 });
    for (const object of pods) {
      const value: unknown = JSON.parse(JSON.stringify(object));
      assert.equal(plainPod(value), value);
    }
    for (const object of namespaces) {
      const value: unknown = JSON.parse(JSON.stringify(object));
      assert.equal(plainNamespace(value), value);
    }
  });
});

describe('NetworkPolicy shape check', () => {
  it('vouches for exactly what zod accepts, and reads it as it is', () => {
    holdsToZod(policy, plainNetworkPolicy, networkPolicySchema);
  });

  it('leaves to zod what it does not vouch for', () => {
    const base = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'n' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port: 80 }] }] },
    };
    assert.equal(plainNetworkPolicy(base), base);
    const variants: unknown[] = [
      { ...base, spec: { ...base.spec, ingres: [] } },
      { ...base, extra: 1 },
      { ...base, spec: { ...base.spec, ingress: [{ ports: [{ port: 80, name: 'x' }] }] } },
      { ...base, spec: { ...base.spec, ingress: [{ ports: [], form: [] }] } },
      {
        ...base,
        spec: { ...base.spec, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', expect: [] } }] }] },
      },
      { ...base, spec: { ...base.spec, egress: [{ to: [{ podselector: {} }] }] } },
      { ...base, spec: { ...base.spec, egress: [{ to: [{ podSelector: { matchLabel: {} } }] }] } },
      {
        ...base,
        spec: { podSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', value: ['b'] }] } },
      },
      { ...base, spec: { podSelector: { matchExpressions: [{ key: 'a', values: ['b'] }] } } },
      { ...base, spec: { ...base.spec, ingress: [{ ports: [{ port: JSON.parse('1e400') as number }] }] } },
      { ...base, spec: { podSelector: { matchLabels: JSON.parse('{"__proto__": "x"}') as unknown } } },
      { ...base, metadata: { namespace: 'n' } },
      { ...base, kind: 'Pod' },
      { ...base, spec: { podSelector: { matchLabels: { app: 1 } } } },
      { ...base, spec: { podSelector: new Map() } },
    ];
    for (const variant of variants)
      assert.equal(plainNetworkPolicy(variant), undefined, JSON.stringify(variant));
  });

  it('takes every policy of a generated cluster as it is', () => {
    const objects = generateShape('a', { scale: 0.01, seed: 3 }).policies;
    assert.ok(objects.length > 0);
    for (const object of objects) {
      const value: unknown = JSON.parse(JSON.stringify(object));
      assert.equal(plainNetworkPolicy(value), value);
    }
  });
});
