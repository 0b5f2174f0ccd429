/**
 * Cases of the diff that random clusters reach rarely or never, each written out: the proposal's
 * namespace DefaultDeny (isolation without any policy), a workload's pair with itself when its
 * change reaches most of the cluster but not its own pods, and a pod's port bound from a policy
 * whose only ingress port is named.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffConnectivity } from '../../src/analysis/diff/diff.ts';
import { SidedEvaluator } from '../../src/analysis/sided.ts';
import { allowedPorts, formatPortSet, indexCluster } from '../../src/semantics/index.ts';
import { clusterOf, endpoint, namespace, pod, policy } from '../helpers/builders.ts';

const DEFAULT_DENY = {
  'net.beta.kubernetes.io/network-policy': JSON.stringify({ ingress: { isolation: 'DefaultDeny' } }),
};

describe('the diff, case by case', () => {
  it("reports what a namespace's DefaultDeny takes away under the proposal's semantics", () => {
    const objects = (deny: boolean) => [
      namespace('a', {}, deny ? DEFAULT_DENY : undefined),
      namespace('b', {}),
      pod('a', 'x', { app: 'x' }, { ips: ['10.0.0.1'] }),
      pod('b', 'y', { app: 'y' }, { ips: ['10.0.0.2'] }),
    ];
    const semantics = 'v1beta1-proposal';
    const diff = diffConnectivity(clusterOf(objects(false), semantics), clusterOf(objects(true), semantics), {
      semantics,
    });
    const between = diff.connections.find((c) => c.from.id === 'b/y' && c.to.id === 'a/x');
    assert.ok(between, 'b/y → a/x is reported');
    assert.equal(between.change, 'removed');
    assert.deepEqual(between.causes, ['Namespace a']);
    // Nothing else of a/x changed but its isolation: no policy names it.
    assert.ok(diff.connections.every((c) => c.to.id === 'a/x'));
  });

  it('compares a workload with itself when its change reaches most of the cluster but not itself', () => {
    // web scales from one pod to two; its rules name only the other pods' block, both ways, so
    // its pods may not talk to each other: web → web goes from a single pod (nothing to decide)
    // to a pair that is denied, and no rule's peer names web.
    const owner = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'web', controller: true };
    const webPod = (name: string, ip: string) => {
      const raw = pod('a', name, { app: 'web' }, { ips: [ip] });
      return { ...raw, metadata: { ...(raw.metadata as object), ownerReferences: [owner] } };
    };
    const rest = [
      namespace('a'),
      ...['1', '2', '3', '4', '5'].map((n) =>
        pod('a', `other-${n}`, { app: `other-${n}` }, { ips: [`10.0.1.${n}`] }),
      ),
      policy('a', 'web', {
        podSelector: { matchLabels: { app: 'web' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.1.0/24' } }] }],
        egress: [{ to: [{ ipBlock: { cidr: '10.0.1.0/24' } }] }],
      }),
    ];
    const diff = diffConnectivity(
      clusterOf([...rest, webPod('web-0', '10.0.0.1')]),
      clusterOf([...rest, webPod('web-0', '10.0.0.1'), webPod('web-1', '10.0.0.2')]),
    );
    const itself = diff.connections.find((c) => c.from.id === 'a/web' && c.to.id === 'a/web');
    assert.ok(itself, 'web → web is reported');
    assert.equal(itself.change, 'removed');
  });

  it("bounds a pod's ingress by the number its named port resolves to on it", () => {
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'x', { app: 'x' }, { ips: ['10.0.0.1'], ports: [{ name: 'http', containerPort: 80 }] }),
      pod('a', 'y', { app: 'y' }, { ips: ['10.0.0.2'] }),
      policy('a', 'p', {
        podSelector: { matchLabels: { app: 'x' } },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ port: 'http' }] }],
      }),
    ]);
    const x = endpoint(cluster, 'a/x');
    const y = endpoint(cluster, 'a/y');
    const sided = new SidedEvaluator(cluster);
    const from = { kind: 'endpoint' as const, endpoint: y };
    const to = { kind: 'endpoint' as const, endpoint: x };
    assert.equal(formatPortSet(sided.bound(x, 'ingress')), 'TCP 80');
    assert.equal(
      formatPortSet(sided.ports(from, to)),
      formatPortSet(allowedPorts(indexCluster(cluster), from, to)),
    );
    assert.equal(formatPortSet(sided.ports(from, to)), 'TCP 80');
  });
});
