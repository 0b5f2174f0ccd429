/**
 * The reference evaluator, rule by rule, against the NetworkPolicy API documentation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowed, clusterOf, namespace, pod, policy, verdict } from '../helpers/builders.ts';

const base = [
  namespace('a', { team: 'a' }),
  namespace('b', { team: 'b' }),
  pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], ports: [{ name: 'http', containerPort: 8080 }] }),
  pod(
    'a',
    'api',
    { app: 'api' },
    {
      ips: ['10.0.0.2'],
      ports: [
        { name: 'http', containerPort: 9000 },
        { name: 'dns', containerPort: 53, protocol: 'UDP' },
      ],
    },
  ),
  pod('b', 'client', { app: 'client' }, { ips: ['10.0.1.1'] }),
  pod('b', 'web', { app: 'web' }, { ips: ['10.0.1.2'] }),
];

describe('isolation', () => {
  it('a pod no policy selects is reachable from everywhere and reaches everywhere', () => {
    const c = clusterOf(base);
    assert.ok(allowed(c, 'b/client', 'a/api', 1234));
    assert.ok(allowed(c, '8.8.8.8', 'a/api', 1234));
    assert.ok(allowed(c, 'a/api', '8.8.8.8', 443, 'UDP'));
    assert.equal(verdict(c, 'b/client', 'a/api', 1).ingress.status, 'not-isolated');
  });
  it('a policy without rules isolates for its policyTypes only', () => {
    const c = clusterOf([...base, policy('a', 'deny-in', { podSelector: { matchLabels: { app: 'api' } } })]);
    const v = verdict(c, 'a/web', 'a/api', 9000);
    assert.equal(v.allowed, false);
    assert.deepEqual(v.ingress.policies, ['a/deny-in']);
    assert.match(v.ingress.misses[0]?.reason ?? '', /only isolates/);
    assert.ok(allowed(c, 'a/api', 'a/web', 8080), 'egress of the isolated pod stays open');
  });
  it('policies in another namespace never select', () => {
    const c = clusterOf([
      ...base,
      policy('b', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ]);
    assert.ok(allowed(c, 'a/web', 'a/api', 9000));
    assert.ok(!allowed(c, 'a/web', 'b/web', 80));
    assert.ok(!allowed(c, 'b/client', 'a/web', 80));
  });
  it('rules of all selecting policies add up', () => {
    const c = clusterOf([
      ...base,
      policy('a', 'from-web', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
      }),
      policy('a', 'from-b', {
        podSelector: {},
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }] }],
      }),
    ]);
    assert.ok(allowed(c, 'a/web', 'a/api', 1));
    assert.ok(allowed(c, 'b/client', 'a/api', 1));
    assert.ok(!allowed(c, '8.8.8.8', 'a/api', 1));
    assert.deepEqual(verdict(c, 'b/client', 'a/api', 1).ingress.matches, [
      { policy: 'a/from-b', rule: 0, peer: 0 },
    ]);
  });
  it('both directions must allow', () => {
    const c = clusterOf([
      ...base,
      policy('b', 'egress-deny', {
        podSelector: { matchLabels: { app: 'client' } },
        policyTypes: ['Egress'],
      }),
    ]);
    const v = verdict(c, 'b/client', 'a/api', 80);
    assert.equal(v.egress.allowed, false);
    assert.equal(v.ingress.allowed, true);
    assert.equal(v.allowed, false);
  });
});

describe('peers', () => {
  const only = (peer: object) =>
    clusterOf([
      ...base,
      policy('a', 'p', { podSelector: { matchLabels: { app: 'api' } }, ingress: [{ from: [peer] }] }),
    ]);
  it('podSelector alone means the policy namespace', () => {
    const c = only({ podSelector: { matchLabels: { app: 'web' } } });
    assert.ok(allowed(c, 'a/web', 'a/api', 1));
    assert.ok(!allowed(c, 'b/web', 'a/api', 1), 'same labels in another namespace do not match');
  });
  it('namespaceSelector alone means every pod of the selected namespaces; {} means all namespaces', () => {
    assert.ok(allowed(only({ namespaceSelector: { matchLabels: { team: 'b' } } }), 'b/web', 'a/api', 1));
    assert.ok(!allowed(only({ namespaceSelector: { matchLabels: { team: 'b' } } }), 'a/web', 'a/api', 1));
    const all = only({ namespaceSelector: {} });
    assert.ok(allowed(all, 'a/web', 'a/api', 1) && allowed(all, 'b/client', 'a/api', 1));
    assert.ok(!allowed(all, '10.0.1.1', 'a/api', 1), 'a plain IP never matches a selector peer');
  });
  it('namespaceSelector and podSelector in one peer are ANDed; in two peers ORed', () => {
    const and = only({
      namespaceSelector: { matchLabels: { team: 'b' } },
      podSelector: { matchLabels: { app: 'web' } },
    });
    assert.ok(allowed(and, 'b/web', 'a/api', 1));
    assert.ok(!allowed(and, 'b/client', 'a/api', 1));
    assert.ok(!allowed(and, 'a/web', 'a/api', 1));
    const or = clusterOf([
      ...base,
      policy('a', 'p', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [
          {
            from: [
              { namespaceSelector: { matchLabels: { team: 'b' } } },
              { podSelector: { matchLabels: { app: 'web' } } },
            ],
          },
        ],
      }),
    ]);
    assert.ok(allowed(or, 'b/client', 'a/api', 1) && allowed(or, 'a/web', 'a/api', 1));
  });
  it('namespaces can be selected by their automatic name label', () => {
    assert.ok(
      allowed(
        only({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'b' } } }),
        'b/client',
        'a/api',
        1,
      ),
    );
  });
  it('ipBlock matches external addresses and pod IPs, minus except', () => {
    const c = only({ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.1.0/24'] } });
    assert.ok(allowed(c, '10.0.200.1', 'a/api', 1));
    assert.ok(allowed(c, 'a/web', 'a/api', 1), 'pod IPs match ipBlocks');
    assert.ok(!allowed(c, 'b/client', 'a/api', 1), 'except removes 10.0.1.0/24');
    assert.ok(!allowed(c, '10.1.0.1', 'a/api', 1));
  });
  it('ipBlock matches IPv6', () => {
    const c = only({ ipBlock: { cidr: '2001:db8::/64' } });
    assert.ok(
      allowed(c, '2001:db8::99', 'a/api', 1) === false,
      'a v4-only pod shares no family with a v6 client',
    );
    const c6 = clusterOf([
      ...base,
      pod('a', 'v6', { app: 'v6' }, { ips: ['2001:db8:1::5'] }),
      policy('a', 'p', {
        podSelector: { matchLabels: { app: 'v6' } },
        ingress: [{ from: [{ ipBlock: { cidr: '2001:db8::/64' } }] }],
      }),
    ]);
    assert.ok(allowed(c6, '2001:db8::99', 'a/v6', 1));
    assert.ok(!allowed(c6, '2001:db8:2::99', 'a/v6', 1));
  });
  it('an empty from list, like an absent one, matches every source', () => {
    const c = clusterOf([...base, policy('a', 'p', { podSelector: {}, ingress: [{ from: [] }] })]);
    assert.ok(allowed(c, '1.2.3.4', 'a/api', 1));
  });
});

describe('ports', () => {
  const withPorts = (ports: object[], direction: 'ingress' | 'egress' = 'ingress') =>
    clusterOf([
      ...base,
      policy('a', 'p', {
        podSelector: { matchLabels: { app: direction === 'ingress' ? 'api' : 'web' } },
        policyTypes: [direction === 'ingress' ? 'Ingress' : 'Egress'],
        [direction]: [{ ports }],
      }),
    ]);
  it('protocol defaults to TCP', () => {
    const c = withPorts([{ port: 9000 }]);
    assert.ok(allowed(c, 'a/web', 'a/api', 9000, 'TCP'));
    assert.ok(!allowed(c, 'a/web', 'a/api', 9000, 'UDP'));
    assert.ok(!allowed(c, 'a/web', 'a/api', 9001, 'TCP'));
  });
  it('a port entry without a port matches every port of its protocol', () => {
    const c = withPorts([{ protocol: 'UDP' }]);
    assert.ok(allowed(c, 'a/web', 'a/api', 12345, 'UDP'));
    assert.ok(!allowed(c, 'a/web', 'a/api', 12345, 'TCP'));
  });
  it('endPort makes an inclusive range', () => {
    const c = withPorts([{ port: 32000, endPort: 32768 }]);
    for (const [port, ok] of [
      [31999, false],
      [32000, true],
      [32500, true],
      [32768, true],
      [32769, false],
    ] as const) {
      assert.equal(allowed(c, 'a/web', 'a/api', port), ok, String(port));
    }
  });
  it('SCTP is a protocol like the others', () => {
    const c = withPorts([{ protocol: 'SCTP', port: 7777 }]);
    assert.ok(allowed(c, 'a/web', 'a/api', 7777, 'SCTP'));
    assert.ok(!allowed(c, 'a/web', 'a/api', 7777, 'TCP'));
  });
  it('named ports resolve against the destination pod, by name and protocol (ingress)', () => {
    const c = withPorts([{ port: 'http' }]);
    assert.ok(allowed(c, 'a/web', 'a/api', 9000), 'api names 9000 http');
    assert.ok(!allowed(c, 'a/web', 'a/api', 8080), 'the source naming 8080 http does not matter');
    const dns = withPorts([{ port: 'dns' }]);
    assert.ok(
      !allowed(dns, 'a/web', 'a/api', 53, 'TCP'),
      'dns is a UDP port; a TCP named port does not match it',
    );
    assert.ok(!allowed(withPorts([{ port: 'dns', protocol: 'UDP' }]), 'a/web', 'a/api', 54, 'UDP'));
    assert.ok(allowed(withPorts([{ port: 'dns', protocol: 'UDP' }]), 'a/web', 'a/api', 53, 'UDP'));
  });
  it('named ports resolve against the destination pod (egress)', () => {
    const c = withPorts([{ port: 'http' }], 'egress');
    assert.ok(allowed(c, 'a/web', 'a/api', 9000));
    assert.ok(!allowed(c, 'a/web', 'a/api', 8080));
    assert.ok(!allowed(c, 'a/web', '8.8.8.8', 9000), 'an outside address has no named ports');
  });
  it('peers and ports of one rule are ANDed', () => {
    const c = clusterOf([
      ...base,
      policy('a', 'p', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 9000 }] }],
      }),
    ]);
    assert.ok(allowed(c, 'a/web', 'a/api', 9000));
    assert.ok(!allowed(c, 'a/web', 'a/api', 9001));
    assert.ok(!allowed(c, 'b/client', 'a/api', 9000));
    const miss = verdict(c, 'a/web', 'a/api', 9001).ingress.misses[0];
    assert.match(miss?.reason ?? '', /TCP\/9001 does not match/);
  });
});

describe('host network, nodes and families', () => {
  const cluster = clusterOf([
    namespace('a'),
    pod('a', 'app', { app: 'x' }, { ips: ['10.0.0.1'], node: 'n1', hostIp: '192.168.0.1' }),
    pod('a', 'other-node', { app: 'y' }, { ips: ['10.0.0.2'], node: 'n2', hostIp: '192.168.0.2' }),
    pod('a', 'agent', { app: 'x' }, { hostNetwork: true, node: 'n2', hostIp: '192.168.0.2' }),
    pod('a', 'agent1', { app: 'z' }, { hostNetwork: true, node: 'n1', hostIp: '192.168.0.1' }),
    policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    policy('a', 'ipblock', {
      podSelector: { matchLabels: { app: 'x' } },
      ingress: [{ from: [{ ipBlock: { cidr: '192.168.0.0/24' } }] }],
    }),
  ]);
  it('hostNetwork pods are not isolated by policies that would select them', () => {
    assert.equal(verdict(cluster, 'a/agent', '8.8.8.8', 53).egress.status, 'host-network');
  });
  it('selectors never match hostNetwork pods, but ipBlocks match their node address', () => {
    assert.ok(allowed(cluster, 'a/agent', 'a/app', 80), 'node 2 address is in 192.168.0.0/24');
    assert.ok(
      !allowed(cluster, 'a/agent1', 'a/other-node', 80),
      'other-node (on another node) has no ipBlock rule',
    );
  });
  it("traffic from a pod's own node is allowed", () => {
    assert.equal(
      verdict(cluster, 'a/agent', 'a/other-node', 80).ingress.status,
      'node-local',
      'hostNetwork pod on the same node',
    );
    assert.equal(verdict(cluster, 'a/agent1', 'a/other-node', 80).ingress.status, 'no-rule-matched');
    const local = verdict(cluster, '192.168.0.2', 'a/other-node', 80);
    assert.equal(local.ingress.status, 'node-local');
    assert.ok(local.allowed);
    assert.ok(!allowed(cluster, '192.168.0.2', 'a/other-node', 80, 'TCP', { allowNodeLocal: false }));
  });
  it('a dual-stack pair is allowed only when every shared family is', () => {
    const c = clusterOf([
      namespace('a'),
      pod('a', 'src', { app: 's' }, { ips: ['10.0.0.1', 'fd00::1'] }),
      pod('a', 'dst', { app: 'd' }, { ips: ['10.0.0.2', 'fd00::2'] }),
      policy('a', 'v4-only', {
        podSelector: { matchLabels: { app: 'd' } },
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }],
      }),
    ]);
    const v = verdict(c, 'a/src', 'a/dst', 80);
    assert.equal(v.allowed, false);
    assert.equal(v.family, 6);
    assert.equal(v.otherFamilies[0]?.family, 4);
    assert.equal(v.otherFamilies[0]?.allowed, true);
    assert.match(v.notes.join(' '), /dual-stack/);
  });
  it('workloads without IPs never match ipBlocks', () => {
    const c = clusterOf([
      namespace('a'),
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'w', namespace: 'a' },
        spec: { template: { metadata: { labels: { app: 'w' } } } },
      },
      pod('a', 'dst', { app: 'd' }, { ips: ['10.0.0.2'] }),
      policy('a', 'all-v4', {
        podSelector: { matchLabels: { app: 'd' } },
        ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
      }),
    ]);
    assert.ok(!allowed(c, 'a/w', 'a/dst', 80));
  });
});

describe('Kubernetes documentation examples', () => {
  // https://kubernetes.io/docs/concepts/services-networking/network-policies/ "test-network-policy"
  const docs = clusterOf([
    namespace('default'),
    namespace('myproject', { project: 'myproject' }),
    namespace('other'),
    pod('default', 'db', { role: 'db' }, { ips: ['172.17.0.10'] }),
    pod('default', 'frontend', { role: 'frontend' }, { ips: ['172.17.2.5'] }),
    pod('default', 'backend', { role: 'backend' }, { ips: ['172.17.2.6'] }),
    pod('myproject', 'anything', { x: 'y' }, { ips: ['10.9.0.1'] }),
    pod('other', 'frontend', { role: 'frontend' }, { ips: ['10.8.0.1'] }),
    policy('default', 'test-network-policy', {
      podSelector: { matchLabels: { role: 'db' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          from: [
            { ipBlock: { cidr: '172.17.0.0/16', except: ['172.17.1.0/24'] } },
            { namespaceSelector: { matchLabels: { project: 'myproject' } } },
            { podSelector: { matchLabels: { role: 'frontend' } } },
          ],
          ports: [{ protocol: 'TCP', port: 6379 }],
        },
      ],
      egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/24' } }], ports: [{ protocol: 'TCP', port: 5978 }] }],
    }),
  ]);
  it('allows ingress from the ipBlock (minus except), the namespace and the frontend pods on 6379 only', () => {
    assert.ok(allowed(docs, '172.17.5.5', 'default/db', 6379));
    assert.ok(!allowed(docs, '172.17.1.5', 'default/db', 6379));
    assert.ok(allowed(docs, 'myproject/anything', 'default/db', 6379));
    assert.ok(allowed(docs, 'default/frontend', 'default/db', 6379));
    assert.ok(
      allowed(docs, 'default/backend', 'default/db', 6379),
      'backend IP 172.17.2.6 is in the ipBlock',
    );
    assert.ok(!allowed(docs, 'other/frontend', 'default/db', 6379));
    assert.ok(!allowed(docs, 'default/frontend', 'default/db', 6380));
  });
  it('allows egress to 10.0.0.0/24 on 5978 only', () => {
    assert.ok(allowed(docs, 'default/db', '10.0.0.7', 5978));
    assert.ok(!allowed(docs, 'default/db', '10.0.1.7', 5978));
    assert.ok(!allowed(docs, 'default/db', '10.0.0.7', 5979));
    assert.ok(!allowed(docs, 'default/db', 'default/frontend', 80));
  });
  it('default deny all, allow all ingress, allow all egress', () => {
    const pods = [
      namespace('d'),
      pod('d', 'x', {}, { ips: ['10.1.1.1'] }),
      pod('d', 'y', {}, { ips: ['10.1.1.2'] }),
    ];
    const denyAll = clusterOf([
      ...pods,
      policy('d', 'default-deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ]);
    assert.ok(!allowed(denyAll, 'd/x', 'd/y', 80));
    const allowIn = clusterOf([
      ...pods,
      policy('d', 'allow-all-ingress', { podSelector: {}, ingress: [{}], policyTypes: ['Ingress'] }),
    ]);
    assert.ok(allowed(allowIn, '1.1.1.1', 'd/y', 80));
    const allowOut = clusterOf([
      ...pods,
      policy('d', 'default-deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
      policy('d', 'allow-all-egress', { podSelector: {}, egress: [{}], policyTypes: ['Egress'] }),
    ]);
    assert.ok(allowed(allowOut, 'd/x', '1.1.1.1', 80));
    assert.ok(!allowed(allowOut, 'd/x', 'd/y', 80), 'ingress of y is still denied');
  });
});
