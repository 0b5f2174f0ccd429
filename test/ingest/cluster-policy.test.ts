/**
 * AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy and Node input: each
 * validation the API's CRDs carry gets its code at the right line and column, a broken object
 * never stops the others, and the accepted shapes (v0.1.5+, v0.1.1, v1alpha2) normalize alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { itReportsEach, type DiagnosticCase } from '../helpers/diagnostic-cases.ts';

const anp = (spec: string, name = 'p'): string =>
  `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata:
  name: ${name}
spec:
${spec}`;
const cnp = (spec: string): string =>
  `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata:
  name: c
spec:
${spec}`;

// Spec content starts on line 6.
const CASES: DiagnosticCase[] = [
  {
    name: 'priority out of range',
    text: anp('  priority: 1001\n  subject: {namespaces: {}}\n'),
    code: 'PRIORITY_INVALID',
    line: 6,
    column: 13,
  },
  {
    name: 'subject with both fields',
    text: anp('  priority: 1\n  subject:\n    namespaces: {}\n    pods: {podSelector: {}}\n'),
    code: 'SUBJECT_INVALID',
    line: 8,
    column: 5,
  },
  {
    name: 'unknown action',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Accept\n    from: [{namespaces: {}}]\n',
    ),
    code: 'ACTION_INVALID',
    line: 9,
    column: 13,
  },
  {
    name: 'peer with two fields',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Deny\n    to:\n    - namespaces: {}\n      networks: [10.0.0.0/8]\n',
    ),
    code: 'PEER_INVALID',
    line: 11,
    column: 7,
  },
  {
    name: 'egress-only peer in ingress',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Deny\n    from:\n    - networks: [10.0.0.0/8]\n',
    ),
    code: 'PEER_INVALID',
    line: 11,
    column: 7,
  },
  {
    name: 'port with two fields',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Deny\n    from: [{namespaces: {}}]\n    ports:\n    - portNumber: {port: 80}\n      namedPort: http\n',
    ),
    code: 'CLUSTER_PORT_INVALID',
    line: 12,
    column: 7,
  },
  {
    name: 'port range backwards',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Deny\n    from: [{namespaces: {}}]\n    ports:\n    - portRange: {start: 10, end: 1}\n',
    ),
    code: 'CLUSTER_PORT_INVALID',
    line: 12,
    column: 35,
  },
  {
    name: 'invalid network',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Deny\n    to:\n    - networks: [10.0.0.0/33]\n',
    ),
    code: 'CIDR_INVALID',
    line: 11,
    column: 18,
  },
  {
    name: 'named port with a networks peer',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Allow\n    to:\n    - networks: [10.0.0.0/8]\n    ports:\n    - namedPort: http\n',
    ),
    code: 'NAMED_PORT_NON_POD_PEER',
    line: 9,
    column: 5,
  },
  {
    name: 'BANP not named default',
    text: `apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata:
  name: other
spec:
  subject: {namespaces: {}}
`,
    code: 'BANP_NAME_NOT_DEFAULT',
    line: 4,
    column: 9,
  },
  {
    name: 'BANP with Pass',
    text: `apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata:
  name: default
spec:
  subject: {namespaces: {}}
  ingress:
  - action: Pass
    from: [{namespaces: {}}]
`,
    code: 'ACTION_INVALID',
    line: 8,
    column: 13,
  },
  {
    name: 'CNP tier',
    text: cnp('  tier: Middle\n  priority: 1\n  subject: {namespaces: {}}\n'),
    code: 'TIER_INVALID',
    line: 6,
    column: 9,
  },
  {
    name: 'CNP protocol entry with two fields',
    text: cnp(
      '  tier: Admin\n  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Deny\n    from: [{namespaces: {}}]\n    protocols:\n    - tcp: {destinationPort: {number: 80}}\n      udp: {destinationPort: {number: 53}}\n',
    ),
    code: 'CLUSTER_PORT_INVALID',
    line: 13,
    column: 7,
  },
  {
    name: 'CNP too many rules',
    text: cnp(
      `  tier: Admin\n  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n${'  - {action: Deny, from: [{namespaces: {}}]}\n'.repeat(26)}`,
    ),
    code: 'API_LIMIT_EXCEEDED',
    line: 10,
    column: 3,
  },
  {
    name: 'domainNames in a Deny rule',
    text: cnp(
      '  tier: Admin\n  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Deny\n    to:\n    - domainNames: [example.com]\n',
    ),
    code: 'DOMAIN_NAME_INVALID',
    line: 12,
    column: 5,
  },
  {
    name: 'bad domain name',
    text: cnp(
      '  tier: Admin\n  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Accept\n    to:\n    - domainNames: [ex*ample.com]\n',
    ),
    code: 'DOMAIN_NAME_INVALID',
    line: 12,
    column: 21,
  },
  {
    name: 'unknown spec field (typo)',
    text: anp('  priority: 1\n  subjct: {namespaces: {}}\n'),
    code: 'SCHEMA_UNKNOWN_FIELD',
    line: 7,
    column: 3,
  },
  {
    name: 'peer with only an unknown field fails closed',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  egress:\n  - action: Deny\n    to:\n    - serviceAccounts: {name: x}\n',
    ),
    code: 'PEER_FAIL_CLOSED',
    line: 11,
    column: 7,
  },
  {
    name: 'v0.1.1 peer shape',
    text: anp(
      '  priority: 1\n  subject: {namespaces: {}}\n  ingress:\n  - action: Deny\n    from:\n    - namespaces: {sameLabels: [team]}\n',
    ),
    code: 'PEER_SHAPE_DEPRECATED',
    line: 11,
    column: 19,
  },
  {
    name: 'node with a bad address',
    text: 'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  addresses:\n  - {type: InternalIP, address: 10.0.0.300}\n',
    code: 'IP_INVALID',
    line: 6,
    column: 33,
  },
];

describe('cluster policy diagnostics', () => {
  itReportsEach(CASES);

  it('a broken policy leaves the others analysed', () => {
    const text = [
      anp('  priority: 5000\n  subject: {namespaces: {}}\n', 'broken'),
      anp('  priority: 1\n  subject: {namespaces: {}}\n', 'fine'),
    ].join('---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'in.yaml', text }], 'v1');
    assert.deepEqual(
      cluster.clusterPolicies.map((p) => p.name),
      ['fine'],
    );
    assert.ok(
      diagnostics.some((d) => d.code === 'PRIORITY_INVALID' && d.object === 'AdminNetworkPolicy broken'),
    );
  });
});

describe('cluster policy normalization', () => {
  const decode = (text: string) => {
    const { cluster, diagnostics } = loadFromTexts([{ name: 'in.yaml', text }], 'v1');
    const errors = diagnostics.filter((d) => d.severity === 'error');
    assert.deepEqual(errors, []);
    return cluster.clusterPolicies;
  };

  it('reads the v0.1.5+, v0.1.1 and v1alpha2 shapes of the same policy alike', () => {
    const current = decode(
      anp(
        '  priority: 3\n  subject: {pods: {namespaceSelector: {matchLabels: {a: b}}, podSelector: {}}}\n  ingress:\n  - name: r\n    action: Allow\n    from: [{pods: {namespaceSelector: {matchLabels: {team: x}}, podSelector: {matchLabels: {app: web}}}}]\n    ports: [{portNumber: {port: 80}}, {portRange: {protocol: UDP, start: 5, end: 9}}, {namedPort: http}]\n',
      ),
    )[0];
    const legacy = decode(
      anp(
        '  priority: 3\n  subject: {pods: {namespaceSelector: {matchLabels: {a: b}}, podSelector: {}}}\n  ingress:\n  - name: r\n    action: Allow\n    from: [{pods: {namespaces: {namespaceSelector: {matchLabels: {team: x}}}, podSelector: {matchLabels: {app: web}}}}]\n    ports: [{portNumber: {port: 80}}, {portRange: {protocol: UDP, start: 5, end: 9}}, {namedPort: http}]\n',
      ),
    )[0];
    const v1alpha2 = decode(
      cnp(
        '  tier: Admin\n  priority: 3\n  subject: {pods: {namespaceSelector: {matchLabels: {a: b}}, podSelector: {}}}\n  ingress:\n  - name: r\n    action: Accept\n    from: [{pods: {namespaceSelector: {matchLabels: {team: x}}, podSelector: {matchLabels: {app: web}}}}]\n    protocols: [{tcp: {destinationPort: {number: 80}}}, {udp: {destinationPort: {range: {start: 5, end: 9}}}}, {destinationNamedPort: http}]\n',
      ),
    )[0];
    const strip = (p: typeof current) =>
      p && { ...p, kind: '', apiVersion: '', name: '', location: undefined };
    assert.deepEqual(strip(legacy), strip(current));
    assert.deepEqual(strip(v1alpha2), strip(current));
    assert.equal(current?.ingress[0]?.action, 'allow');
  });

  it('orders policies by tier, then priority, and puts the BANP after every Baseline CNP', () => {
    const text = [
      cnp('  tier: Baseline\n  priority: 1000\n  subject: {namespaces: {}}\n').replace(
        'name: c',
        'name: late-baseline',
      ),
      `apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata:\n  name: default\nspec:\n  subject: {namespaces: {}}\n`,
      anp('  priority: 7\n  subject: {namespaces: {}}\n', 'seven'),
      anp('  priority: 2\n  subject: {namespaces: {}}\n', 'two'),
    ].join('---\n');
    assert.deepEqual(
      decode(text).map((p) => `${p.kind}/${p.name}`),
      [
        'AdminNetworkPolicy/two',
        'AdminNetworkPolicy/seven',
        'ClusterNetworkPolicy/late-baseline',
        'BaselineAdminNetworkPolicy/default',
      ],
    );
  });

  it('warns when policies of one tier share a priority and a subject', () => {
    const text = [
      anp('  priority: 4\n  subject: {namespaces: {}}\n', 'one'),
      anp('  priority: 4\n  subject: {namespaces: {}}\n', 'other'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: ns}\nspec: {containers: [{name: c}]}\nstatus: {podIP: 10.0.0.1}\n',
    ].join('---\n');
    const { diagnostics } = loadFromTexts([{ name: 'in.yaml', text }], 'v1');
    const tie = diagnostics.find((d) => d.code === 'PRIORITY_TIE');
    assert.ok(tie);
    assert.match(tie.message, /both select ns\/x/);
  });

  it('gives nodes their labels and addresses, merged with what pods report', () => {
    const text = [
      'apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {zone: a}}\nstatus:\n  addresses:\n  - {type: InternalIP, address: 10.9.0.1}\n  - {type: Hostname, address: n1}\n',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: ns}\nspec: {nodeName: n1, containers: [{name: c}]}\nstatus: {podIP: 10.0.0.1, hostIP: 10.9.0.2}\n',
    ].join('---\n');
    const { cluster } = loadFromTexts([{ name: 'in.yaml', text }], 'v1');
    const node = cluster.nodes.get('n1');
    assert.deepEqual(node?.labels, { zone: 'a' });
    assert.equal(node?.declared, true);
    assert.equal(node?.addresses.length, 2);
  });
});
