/**
 * A `__proto__` label key — which zod's record drops from what it gives back, unchecked — is
 * reported as the invalid label key it is, where it is written, and the object is refused: read
 * as an empty map it made `matchLabels: {__proto__: x}` a selector of every pod, silently.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

function load(name: string, text: string) {
  const { cluster, diagnostics } = loadFromTexts([{ name, text }]);
  return {
    found: diagnostics
      .filter((d) => d.severity === 'error')
      .map((d) => [d.code, d.path, d.line, d.column] as const),
    policies: cluster.policies.length,
    clusterPolicies: cluster.clusterPolicies.length,
    endpoints: cluster.endpoints.length,
  };
}

const POLICY_YAML = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: ns}
spec:
  podSelector:
    matchLabels:
      __proto__: web
  ingress:
  - from:
    - podSelector: {matchLabels: {__proto__: 5}}
`;

describe('a __proto__ label key', () => {
  it("is refused in a NetworkPolicy's selectors, in YAML, at the key", () => {
    const { found, policies } = load('p.yaml', POLICY_YAML);
    assert.deepEqual(found, [
      ['LABEL_KEY_INVALID', 'spec.podSelector.matchLabels.__proto__', 7, 7],
      ['LABEL_KEY_INVALID', 'spec.ingress[0].from[0].podSelector.matchLabels.__proto__', 10, 35],
    ]);
    assert.equal(policies, 0);
  });

  it('is refused in JSON too', () => {
    const text =
      '{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "p", ' +
      '"namespace": "ns"}, "spec": {"podSelector": {"matchLabels": {"__proto__": "x"}}}}\n';
    const { found, policies } = load('p.json', text);
    assert.deepEqual(found, [['LABEL_KEY_INVALID', 'spec.podSelector.matchLabels.__proto__', 1, 152]]);
    assert.equal(policies, 0);
  });

  it("is refused in a pod's labels and an AdminNetworkPolicy's subject", () => {
    const pod = `apiVersion: v1
kind: Pod
metadata:
  name: a
  namespace: ns
  labels: {app: web, __proto__: x}
`;
    const podLoad = load('pod.yaml', pod);
    assert.deepEqual(podLoad.found, [['LABEL_KEY_INVALID', 'metadata.labels.__proto__', 6, 22]]);
    assert.equal(podLoad.endpoints, 0);
    const anp = `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: anp}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {__proto__: x}}}
  ingress:
  - {action: Deny, from: [{namespaces: {}}]}
`;
    const anpLoad = load('anp.yaml', anp);
    assert.deepEqual(anpLoad.found, [
      ['LABEL_KEY_INVALID', 'spec.subject.namespaces.matchLabels.__proto__', 6, 40],
    ]);
    assert.equal(anpLoad.clusterPolicies, 0);
  });
});
