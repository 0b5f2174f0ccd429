/**
 * An alias whose anchor is not set before it (in its own document) is reported where the alias
 * is, not at the start of its document; the other documents are still read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

describe('YAML aliases', () => {
  it('places an unresolved alias at the alias', () => {
    const text = [
      'apiVersion: v1',
      'kind: Namespace',
      'metadata: {name: a, labels: &team {team: x}}',
      '---',
      'apiVersion: v1',
      'kind: Namespace',
      'metadata: {name: b, labels: *other}',
      '---',
      'apiVersion: v1',
      'kind: Namespace',
      'metadata: {name: c}',
      '',
    ].join('\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'a.yaml', text }]);
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.line, d.column]),
      [['YAML_SYNTAX', 7, 29]],
    );
    assert.deepEqual([...cluster.namespaces.keys()].sort(), ['a', 'c']);
  });
});
