/**
 * `palisade validate`'s summary line names each kind of policy for what it is: Kubernetes
 * NetworkPolicies are "policies", the network-policy-api's cluster-scoped kinds "cluster
 * policies", and Calico's and Cilium's go by their own kinds — a namespaced Calico NetworkPolicy
 * or CiliumNetworkPolicy is not a cluster policy.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';

const documents = (...texts: string[]): string => texts.join('---\n');
const namespace = (name: string): string => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}}\n`;
const calico = (kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', name: string, ns?: string): string =>
  `apiVersion: projectcalico.org/v3\nkind: ${kind}\nmetadata: {name: ${name}${ns ? `, namespace: ${ns}` : ''}}\n` +
  `spec: {selector: all(), types: [Ingress], ingress: [{action: Allow}]}\n`;
const cilium = (kind: 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy', name: string, ns?: string) =>
  `apiVersion: cilium.io/v2\nkind: ${kind}\nmetadata: {name: ${name}${ns ? `, namespace: ${ns}` : ''}}\n` +
  `spec: {endpointSelector: {}, ingress: [{fromEndpoints: [{}]}]}\n`;
const adminPolicy = (name: string): string =>
  `apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: ${name}}\n` +
  `spec: {priority: 10, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {}}]}]}\n`;

/** The summary: the last line of the text output, after the diagnostic counts. */
async function summary(stdin: string): Promise<string> {
  const r = await cli(['validate', '-f', '-'], { stdin });
  assert.equal(r.code, 0, r.stdout);
  return (r.stdout.trimEnd().split('\n').pop() ?? '').replace(/^.*?; /, '');
}

describe('palisade validate summary', () => {
  it('counts Calico policies as Calico NetworkPolicies and GlobalNetworkPolicies, not cluster policies', async () => {
    const input = documents(
      namespace('a'),
      namespace('b'),
      calico('GlobalNetworkPolicy', 'g1'),
      calico('GlobalNetworkPolicy', 'g2'),
      calico('NetworkPolicy', 'n1', 'a'),
      calico('NetworkPolicy', 'n2', 'b'),
    );
    assert.equal(
      await summary(input),
      '2 namespaces, 0 endpoints, 0 policies, 2 Calico NetworkPolicies, 2 Calico GlobalNetworkPolicies',
    );
  });

  it("counts Cilium's namespaced and clusterwide policies by their kinds", async () => {
    const input = documents(
      namespace('a'),
      cilium('CiliumNetworkPolicy', 'c1', 'a'),
      cilium('CiliumClusterwideNetworkPolicy', 'cc1'),
    );
    assert.equal(
      await summary(input),
      '1 namespace, 0 endpoints, 0 policies, 1 CiliumNetworkPolicy, 1 CiliumClusterwideNetworkPolicy',
    );
  });

  it('keeps "cluster policies" for the network-policy-api kinds, next to the others', async () => {
    const input = documents(namespace('a'), adminPolicy('x'), calico('NetworkPolicy', 'n1', 'a'));
    assert.equal(
      await summary(input),
      '1 namespace, 0 endpoints, 0 policies, 1 cluster policy, 1 Calico NetworkPolicy',
    );
  });

  it('gives the counts by kind in the JSON too, the total kept', async () => {
    const input = documents(
      namespace('a'),
      calico('NetworkPolicy', 'n1', 'a'),
      cilium('CiliumNetworkPolicy', 'c', 'a'),
    );
    const r = await cli(['validate', '-f', '-', '-o', 'json'], { stdin: input });
    const { objects } = JSON.parse(r.stdout) as { objects: Record<string, unknown> };
    assert.equal(objects.clusterPolicies, 2);
    assert.deepEqual(objects.clusterPolicyKinds, { CalicoNetworkPolicy: 1, CiliumNetworkPolicy: 1 });
  });
});
