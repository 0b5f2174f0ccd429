/**
 * YAML syntax errors about flow collections left open: the parser says the same thing at the
 * same place once per nested collection left open; each is reported once, at the place the
 * parser noticed, naming its own `{` or `[` — never the same line twice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

const found = (text: string): string[] =>
  loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics.map(
    (d) => `${d.code} ${d.line}:${d.column} ${/\(the .*\)$/.exec(d.message)?.[0] ?? ''}`,
  );

const POLICY = [
  'apiVersion: networking.k8s.io/v1',
  'kind: NetworkPolicy',
  'metadata: {name: web, namespace: shop}',
  'spec:',
  '  podSelector:',
];

describe('flow collections left open', () => {
  it('nested in a block collection: one error per collection, each naming its opener', () => {
    const text = [...POLICY, '    matchLabels: {app: {x: y', '  policyTypes: [Ingress]', ''].join('\n');
    assert.deepEqual(found(text), [
      'YAML_SYNTAX 7:3 (the { at line 6, column 24 is not closed)',
      'YAML_SYNTAX 7:3 (the { at line 6, column 18 is not closed)',
    ]);
  });

  it("at the document's end, on the opener's own line: the openers are named to tell the errors apart", () => {
    const text = [...POLICY, '    matchLabels: {app: {x: y', ''].join('\n');
    assert.deepEqual(found(text), [
      'YAML_SYNTAX 6:29 (the { at line 6, column 24 is not closed)',
      'YAML_SYNTAX 6:29 (the { at line 6, column 18 is not closed)',
    ]);
  });

  it('maps and sequences nested in each other, each once', () => {
    assert.deepEqual(found('- {a: {b: [c, {d: e\n- x\n'), [
      'YAML_SYNTAX 2:1 (the { at line 1, column 15 is not closed)',
      'YAML_SYNTAX 2:1 (the [ at line 1, column 11 is not closed)',
      'YAML_SYNTAX 2:1 (the { at line 1, column 7 is not closed)',
      'YAML_SYNTAX 2:1 (the { at line 1, column 3 is not closed)',
    ]);
  });

  it('one collection left open is still one error, named only when on an earlier line', () => {
    assert.deepEqual(
      found([...POLICY, '    matchLabels: {app: web', '  policyTypes: [Ingress]', ''].join('\n')),
      ['YAML_SYNTAX 7:3 (the { at line 6, column 18 is not closed)'],
    );
    assert.deepEqual(found([...POLICY, '    matchLabels: {app: web', ''].join('\n')), ['YAML_SYNTAX 6:27 ']);
  });
});
