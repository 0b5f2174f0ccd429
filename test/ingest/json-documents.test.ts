/**
 * The JSON fast path gives exactly what the YAML path gives: the same objects, and the same
 * position for every value and key a diagnostic can ask for. A trailing YAML comment makes a
 * file ineligible for the fast path without moving anything in it, which gives the YAML path's
 * answer for the same text.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LineCounter } from 'yaml';
import { generateShape } from '../../src/generate/shapes.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { parseJsonDocuments } from '../../src/ingest/json-documents.ts';
import { parseDocuments } from '../../src/ingest/parse-documents.ts';
import type { FieldPath } from '../../src/ingest/types.ts';
import { MAX_DEPTH, MAX_DOCUMENT_VALUES } from '../../src/ingest/parse-documents.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

/** Makes a file ineligible for the fast path without moving any position in it. */
const viaYaml = (text: string): string => `${text}\n# parsed the YAML way\n`;

const takesFastPath = (text: string): boolean =>
  parseJsonDocuments(text, new LineCounter(), () => ({ file: 'f.json', line: 0, column: 0 }), {
    maxDepth: MAX_DEPTH,
    maxValues: MAX_DOCUMENT_VALUES,
  }) !== undefined;

/** Every path in a value, and for each a path that does not exist below it. */
function paths(value: unknown, prefix: FieldPath = []): FieldPath[] {
  const result: FieldPath[] = [prefix, [...prefix, 'absent'], [...prefix, 99]];
  if (Array.isArray(value)) value.forEach((item, i) => result.push(...paths(item, [...prefix, i])));
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) result.push(...paths(item, [...prefix, key]));
  return result;
}

/** Asserts that both paths give the same objects and the same positions for every path. */
function assertSameAsYaml(text: string): void {
  const fast = parseDocuments({ name: 'f.json', text });
  const slow = parseDocuments({ name: 'f.json', text: viaYaml(text) });
  assert.deepEqual(fast.diagnostics, slow.diagnostics);
  assert.equal(fast.objects.length, slow.objects.length);
  fast.objects.forEach((object, i) => {
    const other = slow.objects[i];
    assert.ok(other);
    assert.deepEqual(object.value, other.value);
    assert.deepEqual(object.basePath, other.basePath);
    for (const path of paths(object.value, [...object.basePath])) {
      assert.deepEqual(
        object.locator.valueAt(path),
        other.locator.valueAt(path),
        `valueAt ${path.join('.')}`,
      );
      assert.deepEqual(object.locator.keyAt(path), other.locator.keyAt(path), `keyAt ${path.join('.')}`);
    }
  });
}

describe('JSON documents', () => {
  it('generated clusters (one document per line) take the fast path and read as YAML reads them', () => {
    const shape = generateShape('a', { scale: 0.0004, seed: 3 });
    const text = [...shape.namespaces, ...shape.pods, ...shape.policies]
      .map((o) => JSON.stringify(o))
      .join('\n---\n');
    assert.ok(takesFastPath(text));
    assertSameAsYaml(text);
  });

  it('a pretty-printed List (kubectl get -o json) unrolls its items with their positions', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a', labels: { 'x/y': 'q"uote\\d' } } },
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a' }, spec: { containers: [] } },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'q', namespace: 'a' },
          status: { podIP: null, ok: true },
        },
      ],
    };
    const text = `---\n${JSON.stringify(list, null, 2)}\n...\n`;
    assert.ok(takesFastPath(text));
    assertSameAsYaml(text);
    assert.equal(parseDocuments({ name: 'f.json', text }).objects.length, 3);
  });

  it('what YAML would read or report differently goes the YAML way', () => {
    const cases = {
      'a repeated key': '{"kind": "Namespace", "kind": "Pod"}',
      'a number with an exponent (a string in YAML 1.1)': '{"kind": "Pod", "n": 1e3}',
      'a \\u escape': '{"kind": "Pod", "name": "\\u0061"}',
      'a \\/ escape': '{"kind": "Pod", "name": "a\\/b"}',
      'a YAML document among JSON ones': '{"kind": "Pod"}\n---\nkind: Pod\n',
      'broken JSON': '{"kind": "Pod",}',
      'a document on its marker line': '--- {"kind": "Pod"}',
    };
    for (const [what, text] of Object.entries(cases)) {
      assert.equal(takesFastPath(text), false, what);
      assertSameAsYaml(text);
    }
    const repeated = parseDocuments({ name: 'f.json', text: cases['a repeated key'] });
    assert.deepEqual(
      repeated.diagnostics.map((d) => d.code),
      ['YAML_DUPLICATE_KEY'],
    );
  });

  it('a syntax error after decoded documents reads the whole file the YAML way, each object once', () => {
    // Documents are decoded as they are parsed; a broken one further on sends the file the YAML
    // way, and what was decoded of it before must be forgotten, not kept twice.
    const documents = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a' }, spec: { containers: [] } },
    ].map((o) => JSON.stringify(o));
    const text = [...documents, '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"},}'].join(
      '\n---\n',
    );
    assert.equal(takesFastPath(text), false);
    const loaded = loadFromTexts([{ name: 'f.json', text }]);
    const viaYamlOnly = loadFromTexts([{ name: 'f.json', text: viaYaml(text) }]);
    assert.deepEqual(loaded.diagnostics, viaYamlOnly.diagnostics);
    assert.ok(!loaded.diagnostics.some((d) => d.code === 'OBJECT_DUPLICATE'));
    assert.deepEqual([...loaded.cluster.namespaces.keys()], [...viaYamlOnly.cluster.namespaces.keys()]);
    assert.equal(loaded.cluster.endpoints.length, 1);
    assert.equal(loaded.rawObjects.length, viaYamlOnly.rawObjects.length);
  });

  it('JSON lines (objects one after another, no ---) read as the same documents, located on their lines', () => {
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'a' },
        status: { podIP: '10.1.0.5' },
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'bad', namespace: 'a' },
        spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
      },
    ].map((o) => JSON.stringify(o));
    const lines = objects.join('\n') + '\n';
    const separated = objects.join('\n---\n');
    assert.ok(takesFastPath(lines));
    const fromLines = parseDocuments({ name: 'f.json', text: lines });
    const fromSeparated = parseDocuments({ name: 'f.json', text: separated });
    assert.deepEqual(fromLines.diagnostics, []);
    assert.deepEqual(
      fromLines.objects.map((o) => o.value),
      fromSeparated.objects.map((o) => o.value),
    );
    // The YAML path reads them too, one object at a time (a flow mapping ends its document).
    const fromYaml = parseDocuments({ name: 'f.json', text: viaYaml(lines) });
    assert.deepEqual(fromYaml.diagnostics, []);
    assert.deepEqual(
      fromYaml.objects.map((o) => o.value),
      fromSeparated.objects.map((o) => o.value),
    );
    const loaded = loadFromTexts([{ name: 'f.json', text: lines }]);
    assert.deepEqual(
      loaded.cluster.endpoints.map((e) => e.id),
      ['a/p'],
    );
    const cidr = loaded.diagnostics.find((d) => d.code === 'CIDR_INVALID');
    const column = (objects[2] as string).indexOf('"10.0.0.0/33"') + 1;
    assert.deepEqual(cidr && { line: cidr.line, column: cidr.column }, { line: 3, column });
    // Anything between or after the objects that is not an object still goes the YAML way.
    for (const text of [
      `${objects[0]} x ${objects[1]}`,
      `${objects[0]},${objects[1]}`,
      `${objects[0]}}`,
      `${objects[0]}\n{"kind": "Pod",}`,
    ]) {
      assert.equal(takesFastPath(text), false, text);
      assertSameAsYaml(text);
    }
  });

  it('JSON lines take the fast path however many values the file holds: the limit is per object', () => {
    const fast = (text: string, maxValues: number): boolean =>
      parseJsonDocuments(text, new LineCounter(), () => ({ file: 'f.json', line: 0, column: 0 }), {
        maxDepth: MAX_DEPTH,
        maxValues,
      }) !== undefined;
    const object = (i: number) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: `n${i}`, labels: { a: 'b' } },
      });
    const lines = Array.from({ length: 20 }, (_, i) => object(i)).join('\n');
    assert.ok(fast(lines, 50), 'twenty small objects, 50 values allowed per document');
    const big = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: Array.from({ length: 60 }, (_, i) => i),
    });
    assert.equal(fast(`${lines}\n${big}`, 50), false, 'one object over the limit');
  });

  it('a broken object among JSON lines costs its own errors, on its own lines; the others are read', () => {
    const namespace = (name: string): Record<string, unknown> => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
    const good = (name: string, pretty: boolean): string =>
      JSON.stringify(namespace(name), null, pretty ? 2 : 0);
    for (const pretty of [false, true]) {
      const missingBrace = good('b', pretty).replace(/}$/, '');
      const missingComma = good('c', pretty).replace('"v1",', '"v1"');
      const parts = [good('a', pretty), missingBrace, missingComma, good('d', pretty)];
      const text = parts.join('\n') + '\n';
      const firstLine = (k: number): number =>
        parts.slice(0, k).join('\n').split('\n').length + (k > 0 ? 1 : 0);
      const lastLine = (k: number): number => firstLine(k) + (parts[k] as string).split('\n').length - 1;
      const { objects, diagnostics } = parseDocuments({ name: 'f.json', text });
      assert.deepEqual(
        objects.map((o) => (o.value as { metadata: { name: string } }).metadata.name),
        ['a', 'd'],
        `pretty=${pretty}`,
      );
      assert.ok(diagnostics.length >= 2 && diagnostics.length <= 4, JSON.stringify(diagnostics));
      assert.ok(diagnostics.every((d) => d.code === 'YAML_SYNTAX'));
      // Each broken object is reported within its own lines (the one without its closing brace
      // where it ends: the next object's first line).
      for (const k of [1, 2]) {
        const within = diagnostics.filter(
          (d) => (d.line ?? 0) >= firstLine(k) && (d.line ?? 0) <= lastLine(k) + 1,
        );
        assert.ok(within.length > 0, `object ${k} reported: ${JSON.stringify(diagnostics)}`);
      }
      // Decoding goes on as usual: the two good namespaces are in the cluster.
      const loaded = loadFromTexts([{ name: 'f.json', text }]);
      assert.deepEqual([...loaded.cluster.namespaces.keys()].sort(), ['a', 'd']);
    }
    // One document written over many lines, with objects at column 0 inside a list, is not cut.
    const list =
      '{"apiVersion":"v1","kind":"List","items":[\n{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}},\n{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"y"}}\n]}\n# via YAML\n';
    const read = parseDocuments({ name: 'f.json', text: list });
    assert.deepEqual(read.diagnostics, []);
    assert.deepEqual(
      read.objects.map((o) => (o.value as { metadata: { name: string } }).metadata.name),
      ['x', 'y'],
    );
  });

  it('a JSON line whose closing brace was typed as a comma loses only itself, reported at its own end', () => {
    const pod = (name: string, ip: string): string =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'n' },
        status: { podIP: ip },
      });
    const broken = `${pod('a', '10.0.0.1').slice(0, -1)},`;
    const text = [broken, pod('b', '10.0.0.2'), pod('c', '10.0.0.3')].join('\n') + '\n';
    const { objects, diagnostics } = parseDocuments({ name: 'f.json', text });
    assert.deepEqual(
      objects.map((o) => (o.value as { metadata: { name: string } }).metadata.name),
      ['b', 'c'],
    );
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.line, d.column]),
      [['YAML_SYNTAX', 1, broken.length + 1]],
    );
    // A truncated line is reported at its own end too, not at the start of the next one.
    const truncated = [pod('a', '10.0.0.1'), pod('b', '10.0.0.2').slice(0, -1), pod('c', '10.0.0.3')].join(
      '\n',
    );
    const cut = parseDocuments({ name: 'f.json', text: truncated });
    assert.equal(cut.objects.length, 2);
    assert.deepEqual(
      cut.diagnostics.map((d) => [d.line, d.column]),
      [[2, pod('b', '10.0.0.2').length]],
    );
    // A comma before a line-starting { inside a list is valid JSON: not cut there.
    const list =
      '{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}},\n{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"y"}}]}\n# via YAML\n';
    const read = parseDocuments({ name: 'f.json', text: list });
    assert.deepEqual(read.diagnostics, []);
    assert.equal(read.objects.length, 2);
  });

  it('a flow collection left open is named where it was opened', () => {
    const text = [
      'apiVersion: networking.k8s.io/v1',
      'kind: NetworkPolicy',
      "metadata: {name: x, namespace: a, annotations: {note: it's}}",
      'spec:',
      '  podSelector: {matchLabels: {app: "x}"}',
      '  policyTypes: [Ingress]',
      '',
    ].join('\n');
    const { diagnostics } = parseDocuments({ name: 'f.yaml', text });
    assert.equal(diagnostics.length, 1);
    assert.match(diagnostics[0]?.message ?? '', /\(the \{ at line 5, column 16 is not closed\)$/);
  });

  it('a document the fast path cannot take is read the YAML way alone, in its place; the rest stay fast', () => {
    const shape = generateShape('a', { scale: 0.0004, seed: 5 });
    const documents = [...shape.namespaces, ...shape.pods].map((o) => JSON.stringify(o, null, 1));
    const middle = Math.floor(documents.length / 2);
    const variants = [
      (d: string) => d.replace(/}\s*$/, ''), // a missing closing brace: a syntax error
      (d: string) => d.replace('"metadata": {', '"metadata": {\n  "x": 1e3,'), // YAML reads 1e3 its own way
      (d: string) => d.replace('"metadata": {', '"metadata": {"name": "dup",'), // a repeated key
      (d: string) => `${d}\n${d}`, // two objects on consecutive lines, one of them a repeat
    ];
    for (const change of variants) {
      const text = [
        ...documents.slice(0, middle),
        change(documents[middle] as string),
        ...documents.slice(middle + 1),
      ].join('\n---\n');
      assertSameAsYaml(text);
      // Every other document came through the fast path, in order.
      const { objects } = parseDocuments({ name: 'f.json', text });
      const fast = objects.filter((o) => o.locator.constructor.name === 'JsonLocator').length;
      assert.ok(fast >= documents.length - 2, `${fast} of ${objects.length} objects read fast`);
    }
  });

  it("the file's document limit holds however its documents are read, and a truncated object loses only itself", () => {
    const ns = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const many = Array.from({ length: 8 }, (_, i) => ns(`n${i}`));
    for (const [what, text] of [
      ['YAML documents on their marker lines', `---\n${many.map((d) => `--- ${d}`).join('\n')}\n`],
      ['JSON lines after a broken first object', `{"kind":\n${many.join('\n')}\n`],
      [
        'JSON lines, one of them broken',
        `${many.slice(0, 2).join('\n')}\n{"kind": x y}\n${many.slice(2).join('\n')}\n`,
      ],
      [
        'a document read the YAML way among JSON ones',
        `${many[0]}\n---\n${many
          .slice(1)
          .map((d) => `--- ${d}`)
          .join('\n')}\n`,
      ],
    ] as const) {
      const { objects, diagnostics } = parseDocuments({ name: 'f.json', text }, 3);
      assert.ok(objects.length <= 3, `${what}: ${objects.length} objects`);
      assert.deepEqual(
        diagnostics.filter((d) => d.code === 'TOO_MANY_DOCUMENTS').length,
        1,
        `${what}: ${JSON.stringify(diagnostics)}`,
      );
    }
    // A truncated object (no closing brace) is cut from the next one: only it is lost.
    const truncated = `${ns('a')}\n{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"\n${ns('c')}\n`;
    const read = parseDocuments({ name: 'f.json', text: truncated });
    assert.deepEqual(
      read.objects.map((o) => (o.value as { metadata: { name: string } }).metadata.name),
      ['a', 'c'],
    );
    assert.ok(read.diagnostics.length > 0 && read.diagnostics.every((d) => d.line === 2 || d.line === 3));
  });

  it('errors in JSON manifests are located as before: file, line and column', () => {
    const text = [
      JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ok' } }),
      JSON.stringify(
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'bad', namespace: 'ok' },
          spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }], bogus: 1 }] },
        },
        null,
        2,
      ),
    ].join('\n---\n');
    assert.ok(takesFastPath(text));
    const fast = loadFromTexts([{ name: 'f.json', text }]);
    const slow = loadFromTexts([{ name: 'f.json', text: viaYaml(text) }]);
    assert.deepEqual(fast.diagnostics, slow.diagnostics);
    const cidr = fast.diagnostics.find((d) => d.code === 'CIDR_INVALID');
    assert.deepEqual(
      cidr && { line: cidr.line, column: cidr.column },
      { line: 17, column: 23 }, // the opening quote of "10.0.0.0/33"
    );
    assert.equal(fast.cluster.namespaces.get('ok')?.implicit, false);
  });

  it('random JSON documents read as YAML reads them (property)', () => {
    const key = fc.stringMatching(/^[a-z0-9./_"\\ -]{0,8}$/);
    const scalar = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.integer({ min: -1e9, max: 1e9 }),
      fc.constantFrom(0.5, -2.25, true, false, null),
    );
    const value = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        scalar,
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    const document = fc.dictionary(key, value, { minKeys: 1, maxKeys: 5 });
    fc.assert(
      fc.property(
        fc.array(document, { minLength: 1, maxLength: 3 }),
        fc.constantFrom(undefined, 2, '\t'),
        (documents, indent) => {
          assertSameAsYaml(documents.map((d) => JSON.stringify(d, null, indent)).join('\n---\n'));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
