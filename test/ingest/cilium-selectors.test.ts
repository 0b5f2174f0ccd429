/**
 * Cilium's selectors are read once per distinct `matchLabels` (cilium-selectors.ts keeps the valid
 * ones): a selector repeated across policies is one object, and what a selector reports is still
 * reported wherever it appears — a warning each time, an error each time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

const cnp = (name: string, peer: string): string =>
  [
    'apiVersion: cilium.io/v2',
    'kind: CiliumNetworkPolicy',
    `metadata: {name: ${name}, namespace: shop}`,
    'spec:',
    '  endpointSelector: {matchLabels: {app: web}}',
    '  ingress:',
    `    - fromEndpoints: [{matchLabels: ${peer}}]`,
  ].join('\n');

describe("Cilium's selectors, read once", () => {
  it('shares a repeated selector and reports a faulty one at each place it is written', () => {
    const text = [
      cnp('a', '{app: api}'),
      cnp('b', '{app: api}'),
      cnp('c', '{io.cilium.k8s.namespace.labels.team: x}'),
      cnp('d', '{io.cilium.k8s.namespace.labels.team: x}'),
      cnp('e', '{app: "bad value!"}'),
      cnp('f', '{app: "bad value!"}'),
    ].join('\n---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'p.yaml', text: `${text}\n` }]);
    const at = (code: string) => diagnostics.filter((d) => d.code === code).map((d) => d.line);
    // A CiliumNetworkPolicy ignores namespace labels: said for c (line 23) and d (line 31).
    assert.deepEqual(at('SELECTOR_KEY_IGNORED'), [23, 31]);
    assert.deepEqual(at('LABEL_VALUE_INVALID'), [39, 47]);
    const byName = new Map(cluster.clusterPolicies.map((p) => [p.name, p]));
    const peer = (name: string) => byName.get(name)?.ingress[0]?.peers[0];
    const [a, b] = [peer('a'), peer('b')];
    assert.ok(a?.type === 'pods' && b?.type === 'pods');
    assert.equal(a.podSelector, b.podSelector, 'one selector object for both');
    assert.equal(a.podSelector?.key, 'app=api');
    assert.equal(byName.get('a')?.subject.podSelector, byName.get('b')?.subject.podSelector);
    assert.equal(byName.has('e'), false);
  });
});
