/**
 * serve's object sources: an object is found by the name findings, explanations and diagnostics
 * give it — Calico's and other engines' kinds with their group — or by kind alone when no object
 * has exactly that name.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { objectSource } from '../../src/serve/sources.ts';

const TEXT = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: security.block}
spec: {tier: security, selector: all(), types: [Ingress], ingress: [{action: Pass}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: db, namespace: shop}
spec: {selector: all(), ingress: [{action: Allow}]}
---
apiVersion: crd.antrea.io/v1beta1
kind: NetworkPolicy
metadata: {name: lockdown, namespace: shop}
spec: {appliedTo: [{podSelector: {}}]}
`;

describe('object sources', () => {
  const { rawObjects } = loadFromTexts([{ name: 'in.yaml', text: TEXT }]);
  it('finds Calico and other engines’ objects by their group, or by kind alone', () => {
    const line = (name: string): number | undefined => objectSource(rawObjects, name)?.line;
    assert.equal(line('GlobalNetworkPolicy.projectcalico.org security.block'), 1);
    assert.equal(line('GlobalNetworkPolicy security.block'), 1);
    assert.equal(line('NetworkPolicy.projectcalico.org shop/db'), 6);
    assert.equal(line('NetworkPolicy.crd.antrea.io shop/lockdown'), 11);
    assert.equal(line('NetworkPolicy shop/nothing'), undefined);
  });
  it('prefers the object of exactly that name: a Kubernetes NetworkPolicy before a Calico one', () => {
    const kube = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: shop}
spec: {podSelector: {}}
---
`;
    const both = loadFromTexts([{ name: 'in.yaml', text: kube + TEXT }]).rawObjects;
    assert.equal(objectSource(both, 'NetworkPolicy shop/db')?.line, 1);
    assert.equal(objectSource(both, 'NetworkPolicy.projectcalico.org shop/db')?.line, 11);
  });
});
