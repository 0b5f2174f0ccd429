/**
 * The hand-written NetworkPolicy, Pod and Namespace checks (decode-shapes.ts) vouch for exactly
 * what their zod schemas accept from JSON, and for those the object read as it is equals what zod
 * gives back: random objects of each kind (well-formed parts mixed with any JSON value, unknown
 * keys, missing fields) are held to zod, and a generated cluster's objects all take the fast path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { generateShape } from '../../src/generate/shapes.ts';
import { plainNamespace, plainNetworkPolicy, plainPod } from '../../src/ingest/decode-shapes.ts';
import { namespaceSchema, networkPolicySchema, podSchema } from '../../src/ingest/schemas.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 300);

/** Mostly the schema's own kind of value; now and then any JSON value, or null. */
function field<T>(proper: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 150, arbitrary: proper },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constant(null) },
  );
}

/**
 * An object of these fields (the optional ones maybe absent), now and then with a key the schema
 * does not have or without one it requires.
 */
function objectOf(
  fields: Record<string, fc.Arbitrary<unknown>>,
  required: string[] = [],
): fc.Arbitrary<unknown> {
  const mutation = fc.oneof(
    { weight: 150, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.tuple(
          // `__proto__` and `constructor` as JSON.parse and YAML give them: own keys like any other.
          fc.constantFrom('extra', 'podselector', 'toString', 'constructor', '__proto__'),
          fc.jsonValue({ maxDepth: 1 }),
        ),
        fc.tuple(fc.constantFrom(...required, 'absent'), fc.constant(undefined)),
      ),
    },
  );
  return fc.tuple(fc.record(fields, { requiredKeys: required }), mutation).map(([object, change]) => {
    if (!change) return object;
    const [key, value] = change;
    const changed: Record<string, unknown> = { ...object };
    if (value === undefined) delete changed[key];
    // Defined, not assigned: assigning `__proto__` would set the prototype instead of a key.
    else Object.defineProperty(changed, key, { value, enumerable: true, writable: true, configurable: true });
    return changed;
  });
}

const text = fc.constantFrom('app', 'tier', 'web', 'db', 'TCP', 'UDP', 'http', '10.0.0.0/8', '', '__proto__');
const labels = fc.dictionary(text, field(text), { maxKeys: 3 });
const selector = objectOf({
  matchLabels: field(labels),
  matchExpressions: field(
    fc.array(
      objectOf({ key: field(text), operator: field(text), values: field(fc.array(field(text))) }, [
        'key',
        'operator',
      ]),
      {
        maxLength: 2,
      },
    ),
  ),
});
const peer = objectOf({
  podSelector: field(selector),
  namespaceSelector: field(selector),
  ipBlock: field(
    objectOf({ cidr: field(text), except: field(fc.array(field(text), { maxLength: 2 })) }, ['cidr']),
  ),
});
const numberish = fc.oneof(fc.integer({ min: -5, max: 70000 }), fc.double(), fc.constant(Infinity));
const ports = fc.array(
  objectOf({ protocol: field(text), port: field(fc.oneof(numberish, text)), endPort: field(numberish) }),
  { maxLength: 2 },
);
const metadata = fc
  .tuple(
    objectOf(
      {
        name: field(text),
        namespace: field(text),
        labels: field(labels),
        annotations: field(labels),
        ownerReferences: field(
          fc.array(objectOf({ kind: field(text), name: field(text), controller: field(fc.boolean()) }), {
            maxLength: 1,
          }),
        ),
      },
      ['name'],
    ),
    fc.option(fc.jsonValue({ maxDepth: 1 }), { freq: 3 }),
  )
  .map(([object, loose]) =>
    // The metadata is loose: any other key is kept, as zod keeps it.
    loose !== null && object !== null && typeof object === 'object' ? { ...object, uid: loose } : object,
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

/** As JSON.parse gives a generated value (1e400 reads as Infinity there, which zod rejects). */
function asParsed(generated: unknown): unknown {
  const json = JSON.stringify(generated, (_, v: unknown) => (v === Infinity ? 'INFINITY' : v));
  return JSON.parse(json.replace(/"INFINITY"/g, '1e400'));
}

/** Whether an own `__proto__` key is anywhere in `value`. */
function hasProtoKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) return true;
  return Object.values(value).some(hasProtoKey);
}

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

/** Every place in a JSON value: its container and key (the root has none). */
function places(value: unknown, into: [object, string | number][] = []): [object, string | number][] {
  if (value === null || typeof value !== 'object') return into;
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value);
  for (const [key, item] of entries) {
    into.push([value, key]);
    places(item, into);
  }
  return into;
}

/**
 * A well-formed object (as zod judges it) with one change anywhere in it, however deep: a value
 * replaced by one of another kind, a key added (`__proto__` and `constructor` among them), a
 * field taken away, an element of another kind put in a list. The random objects above change
 * now and then at every level; this reaches a deep field of a well-formed object far more often.
 */
function oneDeepChange(
  arbitrary: fc.Arbitrary<unknown>,
  schema: { safeParse(value: unknown): { success: boolean } },
): fc.Arbitrary<unknown> {
  const other = fc.oneof(
    fc.jsonValue({ maxDepth: 1 }),
    fc.constantFrom(null, [5], [null], [{}], { extra: 1 }, 1.5, true),
  );
  const key = fc.constantFrom('extra', 'constructor', '__proto__', 'toString', 'values', 'ports', 'from');
  return fc
    .tuple(
      arbitrary.map(asParsed).filter((value) => schema.safeParse(value).success),
      fc.nat(),
      fc.constantFrom('replace', 'add key', 'delete', 'add element'),
      other,
      key,
    )
    .map(([wellFormed, at, change, other, newKey]) => {
      // Fresh copies: fast-check hands the same values out again, and a constant is one object.
      const value = structuredClone(wellFormed);
      const replacement = structuredClone(other);
      const all = places(value);
      if (all.length === 0) return value;
      const [container, field] = all[at % all.length] as [object, string | number];
      const target = container as Record<string | number, unknown>;
      const inner = target[field];
      if (change === 'replace') target[field] = replacement;
      else if (change === 'delete' && !Array.isArray(container)) delete target[field];
      else if (change === 'add element' && Array.isArray(inner)) inner.push(replacement);
      else if (inner !== null && typeof inner === 'object' && !Array.isArray(inner))
        Object.defineProperty(inner, newKey, {
          value: replacement,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else target[field] = replacement;
      return value;
    });
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
