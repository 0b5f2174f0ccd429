/**
 * Random JSON objects for holding hand-written shape checks (src/ingest/decode-shapes.ts,
 * engine-shapes.ts) to their zod schemas: well-formed parts mixed with any JSON value, unknown
 * keys, missing fields, and one change anywhere inside a well-formed object.
 */
import fc from 'fast-check';

/** Mostly the schema's own kind of value; now and then any JSON value, or null. */
export function field<T>(proper: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
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
export function objectOf(
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

export const text = fc.constantFrom(
  'app',
  'tier',
  'web',
  'db',
  'TCP',
  'UDP',
  'http',
  '10.0.0.0/8',
  '',
  '__proto__',
);
const labels = fc.dictionary(text, field(text), { maxKeys: 3 });
export const selector = objectOf({
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
export const numberish = fc.oneof(fc.integer({ min: -5, max: 70000 }), fc.double(), fc.constant(Infinity));
export const metadata = fc
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
/** As JSON.parse gives a generated value (1e400 reads as Infinity there, which zod rejects). */
export function asParsed(generated: unknown): unknown {
  const json = JSON.stringify(generated, (_, v: unknown) => (v === Infinity ? 'INFINITY' : v));
  return JSON.parse(json.replace(/"INFINITY"/g, '1e400'));
}

/** Whether an own `__proto__` key is anywhere in `value`. */
export function hasProtoKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) return true;
  return Object.values(value).some(hasProtoKey);
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
export function oneDeepChange(
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
