/**
 * The v1beta1 proposal's semantics (seed 003): namespace DefaultDeny ingress isolation, ingress
 * only, traffic from the pod's node allowed, and an empty from/ports list matching nothing.
 * Includes the proposal's own three examples.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowed, clusterOf, namespace, pod, policy, verdict } from '../helpers/builders.ts';

const DEFAULT_DENY = { 'net.beta.kubernetes.io/network-policy': '{"ingress": {"isolation": "DefaultDeny"}}' };
const LEGACY = { semantics: 'v1beta1-proposal' } as const;

describe('v1beta1 proposal semantics', () => {
  it('example 1: only frontend pods may reach backend on TCP 6379 in a DefaultDeny namespace', () => {
    const c = clusterOf(
      [
        namespace('myns', {}, DEFAULT_DENY),
        pod('myns', 'backend', { role: 'backend' }, { ips: ['10.0.0.1'], node: 'n1', hostIp: '192.168.0.1' }),
        pod('myns', 'frontend', { role: 'frontend' }, { ips: ['10.0.0.2'] }),
        pod('myns', 'other', { role: 'other' }, { ips: ['10.0.0.3'] }),
        policy(
          'myns',
          'allow-frontend',
          {
            podSelector: { matchLabels: { role: 'backend' } },
            ingress: [
              {
                from: [{ podSelector: { matchLabels: { role: 'frontend' } } }],
                ports: [{ protocol: 'TCP', port: 6379 }],
              },
            ],
          },
          'extensions/v1beta1',
        ),
      ],
      'v1beta1-proposal',
    );
    assert.ok(allowed(c, 'myns/frontend', 'myns/backend', 6379, 'TCP', LEGACY));
    assert.ok(!allowed(c, 'myns/frontend', 'myns/backend', 6380, 'TCP', LEGACY));
    assert.ok(!allowed(c, 'myns/other', 'myns/backend', 6379, 'TCP', LEGACY));
    assert.ok(
      !allowed(c, 'myns/frontend', 'myns/other', 80, 'TCP', LEGACY),
      'DefaultDeny isolates pods no policy selects',
    );
    assert.ok(
      allowed(c, '192.168.0.1', 'myns/backend', 22, 'TCP', LEGACY),
      "kubelet traffic from the pod's node is allowed",
    );
    assert.equal(verdict(c, '192.168.0.1', 'myns/backend', 22, 'TCP', LEGACY).ingress.status, 'node-local');
  });

  it('example 2: TCP 443 from any namespace labelled user=bob', () => {
    const c = clusterOf(
      [
        namespace('web', {}, DEFAULT_DENY),
        namespace('bobs', { user: 'bob' }),
        namespace('alices', { user: 'alice' }),
        pod('web', 'fe', { role: 'frontend' }, { ips: ['10.0.0.1'] }),
        pod('bobs', 'x', {}, { ips: ['10.0.1.1'] }),
        pod('alices', 'y', {}, { ips: ['10.0.2.1'] }),
        policy('web', 'allow-tcp-443', {
          podSelector: { matchLabels: { role: 'frontend' } },
          ingress: [
            {
              ports: [{ protocol: 'TCP', port: 443 }],
              from: [{ namespaceSelector: { matchLabels: { user: 'bob' } } }],
            },
          ],
        }),
      ],
      'v1beta1-proposal',
    );
    assert.ok(allowed(c, 'bobs/x', 'web/fe', 443, 'TCP', LEGACY));
    assert.ok(!allowed(c, 'alices/y', 'web/fe', 443, 'TCP', LEGACY));
    assert.ok(!allowed(c, 'bobs/x', 'web/fe', 80, 'TCP', LEGACY));
  });

  it('example 3: allow-all with an empty ingress rule', () => {
    const c = clusterOf(
      [
        namespace('n', {}, DEFAULT_DENY),
        pod('n', 'p', {}, { ips: ['10.0.0.1'] }),
        policy('n', 'allow-all', { podSelector: null, ingress: [{}] }),
      ],
      'v1beta1-proposal',
    );
    assert.ok(allowed(c, '8.8.8.8', 'n/p', 1, 'UDP', LEGACY));
  });

  it('without DefaultDeny, policies have no effect', () => {
    const c = clusterOf(
      [
        namespace('open'),
        pod('open', 'p', {}, { ips: ['10.0.0.1'] }),
        policy('open', 'deny', { podSelector: {} }),
      ],
      'v1beta1-proposal',
    );
    assert.ok(allowed(c, '8.8.8.8', 'open/p', 80, 'TCP', LEGACY));
    assert.equal(verdict(c, '8.8.8.8', 'open/p', 80, 'TCP', LEGACY).ingress.status, 'namespace-not-isolated');
    assert.ok(!allowed(c, '8.8.8.8', 'open/p', 80), 'the same input under v1 is denied');
  });

  it('egress rules are ignored', () => {
    const c = clusterOf(
      [
        namespace('n', {}, DEFAULT_DENY),
        pod('n', 'p', {}, { ips: ['10.0.0.1'] }),
        policy('n', 'eg', { podSelector: {}, policyTypes: ['Egress'] }),
      ],
      'v1beta1-proposal',
    );
    assert.ok(allowed(c, 'n/p', '8.8.8.8', 80, 'TCP', LEGACY));
  });

  it('an empty from or ports list matches nothing (absent matches everything)', () => {
    const objects = (rule: object) => [
      namespace('n', {}, DEFAULT_DENY),
      pod('n', 'p', {}, { ips: ['10.0.0.1'] }),
      policy('n', 'r', { podSelector: {}, ingress: [rule] }),
    ];
    assert.ok(
      !allowed(clusterOf(objects({ from: [] }), 'v1beta1-proposal'), '8.8.8.8', 'n/p', 80, 'TCP', LEGACY),
    );
    assert.ok(
      !allowed(clusterOf(objects({ ports: [] }), 'v1beta1-proposal'), '8.8.8.8', 'n/p', 80, 'TCP', LEGACY),
    );
    assert.ok(
      allowed(
        clusterOf(objects({ ports: [{ port: 80 }] }), 'v1beta1-proposal'),
        '8.8.8.8',
        'n/p',
        80,
        'TCP',
        LEGACY,
      ),
    );
    assert.ok(allowed(clusterOf(objects({ from: [] })), '8.8.8.8', 'n/p', 80), 'v1: empty from matches all');
  });
});
