/**
 * Every lint check with a case that must report it and a near miss that must not; locations
 * point at the field; rule selection by code.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lintCluster, objectLocator, type Finding } from '../../src/analysis/lint/index.ts';
import { load, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

function lint(objects: readonly Raw[], only?: string[]): Finding[] {
  const loaded = load(objects);
  return [
    ...lintCluster(loaded.cluster, {
      locator: objectLocator(loaded.rawObjects),
      diagnostics: loaded.diagnostics,
      ...(only ? { only } : {}),
    }).findings,
  ];
}

function codes(objects: readonly Raw[], code: string): Finding[] {
  return lint(objects, [code]);
}

const web = pod(
  'shop',
  'web',
  { app: 'web' },
  { ips: ['10.0.0.1'], ports: [{ name: 'http', containerPort: 8080 }] },
);
const api = pod(
  'shop',
  'api',
  { app: 'api' },
  { ips: ['10.0.0.2'], ports: [{ name: 'http', containerPort: 8000 }] },
);
const coredns = pod(
  'kube-system',
  'coredns-1',
  { 'k8s-app': 'kube-dns' },
  {
    ips: ['10.0.9.1'],
    ports: [
      { name: 'dns', containerPort: 53, protocol: 'UDP' },
      { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
    ],
  },
);
const base = [namespace('shop', { team: 'shop' }), namespace('kube-system'), web, api];

function anp(name: string, priority: number, spec: Raw): Raw {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'AdminNetworkPolicy',
    metadata: { name },
    spec: { priority, subject: { namespaces: {} }, ...spec },
  };
}

describe('lint: selection', () => {
  it('POLICY_SELECTS_NOTHING: a podSelector no workload matches, at the podSelector field', () => {
    const found = codes(
      [...base, policy('shop', 'ghost', { podSelector: { matchLabels: { app: 'gohst' } }, ingress: [{}] })],
      'POLICY_SELECTS_NOTHING',
    );
    assert.equal(found.length, 1);
    assert.equal(found[0]?.object, 'NetworkPolicy shop/ghost');
    assert.equal(found[0]?.path, 'spec.podSelector');
    assert.ok((found[0]?.line ?? 0) > 0);
    assert.deepEqual(
      codes(
        [...base, policy('shop', 'ok', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{}] })],
        'POLICY_SELECTS_NOTHING',
      ),
      [],
    );
  });

  it('POLICY_SELECTS_NOTHING: a cluster policy subject', () => {
    const subject = (labels: Raw): Raw =>
      anp('x', 10, {
        subject: { namespaces: { matchLabels: labels } },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      });
    assert.equal(codes([...base, subject({ team: 'nobody' })], 'POLICY_SELECTS_NOTHING').length, 1);
    assert.equal(codes([...base, subject({ team: 'shop' })], 'POLICY_SELECTS_NOTHING').length, 0);
  });

  it('PEER_MATCHES_NOTHING: selector peers of NetworkPolicy and cluster policy', () => {
    const np = (from: Raw): Raw => policy('shop', 'p', { podSelector: {}, ingress: [{ from: [from] }] });
    const found = codes(
      [...base, np({ podSelector: { matchLabels: { app: 'frontend' } } })],
      'PEER_MATCHES_NOTHING',
    );
    assert.equal(found.length, 1);
    assert.equal(found[0]?.path, 'spec.ingress[0].from[0]');
    assert.equal(
      codes([...base, np({ podSelector: { matchLabels: { app: 'web' } } })], 'PEER_MATCHES_NOTHING').length,
      0,
    );
    assert.equal(
      codes([...base, np({ namespaceSelector: { matchLabels: { team: 'none' } } })], 'PEER_MATCHES_NOTHING')
        .length,
      1,
    );
    assert.equal(
      codes([...base, np({ namespaceSelector: { matchLabels: { team: 'shop' } } })], 'PEER_MATCHES_NOTHING')
        .length,
      0,
    );
    const cp = (labels: Raw): Raw =>
      anp('x', 10, { ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: labels } }] }] });
    assert.equal(codes([...base, cp({ team: 'none' })], 'PEER_MATCHES_NOTHING').length, 1);
    assert.equal(codes([...base, cp({ team: 'shop' })], 'PEER_MATCHES_NOTHING').length, 0);
  });

  it('WORKLOAD_NOT_ISOLATED: an endpoint no policy selects', () => {
    const found = codes(
      [...base, policy('shop', 'web', { podSelector: { matchLabels: { app: 'web' } } })],
      'WORKLOAD_NOT_ISOLATED',
    );
    assert.deepEqual(
      found.map((f) => f.object),
      ['Pod shop/api'],
    );
    assert.deepEqual(
      codes([...base, policy('shop', 'all', { podSelector: {} })], 'WORKLOAD_NOT_ISOLATED'),
      [],
    );
  });

  it('skips selection checks when the input has no workloads, and says so', () => {
    const loaded = load([
      policy('shop', 'ghost', { podSelector: { matchLabels: { app: 'x' } }, ingress: [{}] }),
    ]);
    const report = lintCluster(loaded.cluster, {});
    assert.deepEqual(
      report.findings.filter((f) => f.code === 'POLICY_SELECTS_NOTHING'),
      [],
    );
    assert.match(report.skipped[0]?.check ?? '', /POLICY_SELECTS_NOTHING/);
  });
});

describe('lint: rule shapes', () => {
  it('RULES_IGNORED_BY_POLICY_TYPES: egress rules under policyTypes [Ingress]', () => {
    const spec = (policyTypes?: string[]): Raw => ({
      podSelector: {},
      ...(policyTypes ? { policyTypes } : {}),
      egress: [{ to: [{ podSelector: {} }] }],
    });
    const found = codes([...base, policy('shop', 'p', spec(['Ingress']))], 'RULES_IGNORED_BY_POLICY_TYPES');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.path, 'spec.egress');
    assert.equal(
      codes([...base, policy('shop', 'p', spec(['Ingress', 'Egress']))], 'RULES_IGNORED_BY_POLICY_TYPES')
        .length,
      0,
    );
    assert.equal(codes([...base, policy('shop', 'p', spec())], 'RULES_IGNORED_BY_POLICY_TYPES').length, 0);
  });

  it('PEERS_SPLIT_SELECTORS: namespaceSelector and podSelector as two peers', () => {
    const split = policy('shop', 'p', {
      podSelector: {},
      ingress: [
        {
          from: [
            { namespaceSelector: { matchLabels: { team: 'shop' } } },
            { podSelector: { matchLabels: { app: 'web' } } },
          ],
        },
      ],
    });
    const found = codes([...base, split], 'PEERS_SPLIT_SELECTORS');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.path, 'spec.ingress[0].from[1]');
    const joined = policy('shop', 'p', {
      podSelector: {},
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { team: 'shop' } },
              podSelector: { matchLabels: { app: 'web' } },
            },
          ],
        },
      ],
    });
    assert.equal(codes([...base, joined], 'PEERS_SPLIT_SELECTORS').length, 0);
  });

  it('IPBLOCK_MATCHES_PODS: a block holding pod addresses, not one whose except removes them', () => {
    const block = (ipBlock: Raw): Raw =>
      policy('shop', 'p', { podSelector: {}, egress: [{ to: [{ ipBlock }], ports: [{ port: 443 }] }] });
    const found = codes([...base, block({ cidr: '10.0.0.0/8' })], 'IPBLOCK_MATCHES_PODS');
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /2 pods/);
    assert.equal(found[0]?.path, 'spec.egress[0].to[0].ipBlock.cidr');
    assert.equal(
      codes([...base, block({ cidr: '10.0.0.0/8', except: ['10.0.0.0/24'] })], 'IPBLOCK_MATCHES_PODS').length,
      0,
    );
    assert.equal(codes([...base, block({ cidr: '203.0.113.0/24' })], 'IPBLOCK_MATCHES_PODS').length, 0);
    // More pods than the message lists: the count and the list agree.
    const many = [0, 1, 2, 3, 4].map((i) => pod('shop', `extra-${i}`, {}, { ips: [`10.9.0.${i + 1}`] }));
    const listed = codes([...base, ...many, block({ cidr: '10.0.0.0/8' })], 'IPBLOCK_MATCHES_PODS');
    assert.match(
      listed[0]?.message ?? '',
      /holds the addresses of 7 pods \([^,()]+, [^,()]+, [^,()]+ and 4 more\)/,
    );
  });

  it('IPBLOCK_TOO_BROAD: /0 on every port, not with ports or a narrow block', () => {
    const block = (cidr: string, ports?: Raw[]): Raw =>
      policy('shop', 'p', {
        podSelector: {},
        egress: [{ to: [{ ipBlock: { cidr } }], ...(ports ? { ports } : {}) }],
      });
    assert.equal(codes([...base, block('0.0.0.0/0')], 'IPBLOCK_TOO_BROAD').length, 1);
    assert.equal(codes([...base, block('::/0')], 'IPBLOCK_TOO_BROAD').length, 1);
    assert.equal(codes([...base, block('0.0.0.0/0', [{ port: 443 }])], 'IPBLOCK_TOO_BROAD').length, 0);
    assert.equal(codes([...base, block('172.16.0.0/12')], 'IPBLOCK_TOO_BROAD').length, 0);
  });

  it("Calico's nets: never for holding pods (Calico matches them by definition), nor for a rule naming no address", () => {
    const calico = (egress: Raw[]): Raw => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'c', namespace: 'shop' },
      spec: { selector: 'all()', types: ['Egress'], egress },
    });
    const blocks = ['IPBLOCK_MATCHES_PODS', 'IPBLOCK_TOO_BROAD'];
    const onlyPorts = calico([{ action: 'Allow', protocol: 'TCP', destination: { ports: [9090] } }]);
    assert.deepEqual(lint([...base, onlyPorts], blocks), []);
    const everything = calico([{ action: 'Allow' }]);
    assert.deepEqual(lint([...base, everything], blocks), []);
    const podNets = calico([{ action: 'Allow', protocol: 'TCP', destination: { nets: ['10.0.0.0/8'] } }]);
    assert.deepEqual(lint([...base, podNets], blocks), []);
    // A block it names on every port is still too broad.
    const broad = calico([{ action: 'Allow', destination: { nets: ['10.0.0.0/7'] } }]);
    assert.deepEqual(
      lint([...base, broad], blocks).map((f) => f.code),
      ['IPBLOCK_TOO_BROAD'],
    );
  });
});

describe('lint: ports', () => {
  it('NAMED_PORT_UNRESOLVED: an ingress named port the selected pods do not declare', () => {
    const np = (port: string): Raw =>
      policy('shop', 'p', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port }] }] });
    const found = codes([...base, np('metrics')], 'NAMED_PORT_UNRESOLVED');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.path, 'spec.ingress[0].ports[0]');
    assert.equal(codes([...base, np('http')], 'NAMED_PORT_UNRESOLVED').length, 0);
  });

  it('NAMED_PORT_WRONG_PROTOCOL: port dns over TCP (the default) to pods declaring dns as UDP', () => {
    const np = (protocol?: string): Raw =>
      policy('shop', 'p', {
        podSelector: {},
        egress: [
          {
            to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
            ports: [{ port: 'dns', ...(protocol ? { protocol } : {}) }],
          },
        ],
      });
    const found = codes([...base, coredns, np()], 'NAMED_PORT_WRONG_PROTOCOL');
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /UDP/);
    assert.equal(codes([...base, coredns, np('UDP')], 'NAMED_PORT_WRONG_PROTOCOL').length, 0);
  });

  it('PORT_PROTOCOL_MISMATCH: TCP/53 without UDP/53, and port dns over TCP with no pods to ask', () => {
    const np = (ports: Raw[]): Raw =>
      policy('shop', 'p', { podSelector: {}, egress: [{ to: [{ namespaceSelector: {} }], ports }] });
    assert.equal(codes([...base, np([{ port: 53 }])], 'PORT_PROTOCOL_MISMATCH').length, 1);
    assert.equal(
      codes([...base, np([{ port: 53 }, { port: 53, protocol: 'UDP' }])], 'PORT_PROTOCOL_MISMATCH').length,
      0,
    );
    const policiesOnly = [np([{ port: 'dns' }])];
    assert.equal(codes(policiesOnly, 'PORT_PROTOCOL_MISMATCH').length, 1);
    assert.equal(codes([np([{ port: 'dns', protocol: 'UDP' }])], 'PORT_PROTOCOL_MISMATCH').length, 0);
  });
});

describe('lint: DNS', () => {
  const denyEgress = policy('shop', 'default-deny', { podSelector: {}, policyTypes: ['Egress'] });
  const allowDns = policy('shop', 'allow-dns', {
    podSelector: {},
    policyTypes: ['Egress'],
    egress: [
      {
        to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ],
  });

  it('EGRESS_WITHOUT_DNS: with the DNS pods, by evaluating the connection', () => {
    const found = codes([...base, coredns, denyEgress], 'EGRESS_WITHOUT_DNS');
    assert.equal(found.length, 1);
    assert.match(
      found[0]?.message ?? '',
      /shop\/api\[Pod\] and shop\/web\[Pod\] are isolated .*kube-system\/coredns-1/,
    );
    assert.equal(codes([...base, coredns, denyEgress, allowDns], 'EGRESS_WITHOUT_DNS').length, 0);
    // The DNS pod's own ingress policy refusing the namespace counts too.
    const dnsLocked = policy('kube-system', 'locked', { podSelector: {}, policyTypes: ['Ingress'] });
    assert.equal(codes([...base, coredns, denyEgress, allowDns, dnsLocked], 'EGRESS_WITHOUT_DNS').length, 1);
  });

  it('EGRESS_WITHOUT_DNS: without DNS pods, by the rules', () => {
    assert.equal(codes([...base, denyEgress], 'EGRESS_WITHOUT_DNS').length, 1);
    assert.equal(codes([...base, denyEgress, allowDns], 'EGRESS_WITHOUT_DNS').length, 0);
  });
});

describe('lint: redundancy', () => {
  const toWeb = (name: string, ingress: Raw[]): Raw =>
    policy('shop', name, { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress });

  it('POLICY_REDUNDANT: contained in the union of two other policies (not a textual match)', () => {
    const narrow = toWeb('narrow', [
      { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ port: 8000, endPort: 8080 }] },
    ]);
    // The api pod is reached by address in one policy and by namespace in another, on port ranges.
    const byAddress = toWeb('by-address', [
      { from: [{ ipBlock: { cidr: '10.0.0.0/30' } }], ports: [{ port: 8000, endPort: 8079 }] },
    ]);
    const byNamespace = toWeb('by-namespace', [
      { from: [{ namespaceSelector: { matchLabels: { team: 'shop' } } }], ports: [{ port: 'http' }] },
    ]);
    const found = codes([...base, narrow, byAddress, byNamespace], 'POLICY_REDUNDANT');
    assert.deepEqual(
      found.map((f) => f.object),
      ['NetworkPolicy shop/narrow'],
    );
    assert.equal(found[0]?.related.length, 2);
    // One port more than the others allow: not redundant.
    const wider = toWeb('narrow', [
      { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ port: 8000, endPort: 8081 }] },
    ]);
    assert.deepEqual(codes([...base, wider, byAddress, byNamespace], 'POLICY_REDUNDANT'), []);
  });

  it('POLICY_REDUNDANT: of two identical policies only the later is reported; a default-deny is never', () => {
    const rule = [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }];
    const found = codes([...base, toWeb('a-first', rule), toWeb('b-second', rule)], 'POLICY_REDUNDANT');
    assert.deepEqual(
      found.map((f) => f.object),
      ['NetworkPolicy shop/b-second'],
    );
    const defaultDeny = policy('shop', 'default-deny', { podSelector: {}, policyTypes: ['Ingress'] });
    const fromWeb = [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }];
    const perApp = [
      toWeb('web', rule),
      policy('shop', 'api', {
        podSelector: { matchLabels: { app: 'api' } },
        policyTypes: ['Ingress'],
        ingress: fromWeb,
      }),
    ];
    assert.deepEqual(codes([...base, defaultDeny, ...perApp], 'POLICY_REDUNDANT'), []);
  });

  it('POLICY_REDUNDANT: not when it is the only policy isolating some endpoint', () => {
    const all = policy('shop', 'all', {
      podSelector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] },
      policyTypes: ['Ingress'],
    });
    assert.deepEqual(codes([...base, all, toWeb('web', [{}])], 'POLICY_REDUNDANT'), []);
  });

  it('RULE_REDUNDANT: a rule inside another of the same policy, through the pods it selects', () => {
    const p = toWeb('p', [
      { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ port: 8080 }] },
      { from: [{ ipBlock: { cidr: '10.0.0.0/24' } }], ports: [{ port: 8080 }] },
    ]);
    const found = codes([...base, p], 'RULE_REDUNDANT');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.path, 'spec.ingress[0]');
    const q = toWeb('p', [
      { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ port: 8080 }] },
      { from: [{ ipBlock: { cidr: '10.0.0.0/24' } }], ports: [{ port: 9090 }] },
    ]);
    assert.deepEqual(codes([...base, q], 'RULE_REDUNDANT'), []);
  });

  it('RULE_REDUNDANT: not the last egress rule of a policy whose policyTypes are implicit', () => {
    const p = policy('shop', 'p', {
      podSelector: { matchLabels: { app: 'web' } },
      egress: [{ to: [{ podSelector: {} }] }],
    });
    const other = policy('shop', 'other', { podSelector: {}, policyTypes: ['Egress'], egress: [{}] });
    // Removing the rule would stop p isolating web for egress; "other" does isolate it, so it may go.
    assert.equal(codes([...base, p, other], 'RULE_REDUNDANT').length, 1);
    const otherIngressOnly = policy('shop', 'other', { podSelector: {}, policyTypes: ['Ingress'] });
    const broad = policy('shop', 'p', {
      podSelector: { matchLabels: { app: 'web' } },
      egress: [{ to: [{ podSelector: {} }] }, {}],
    });
    // Two rules: the first is inside the second and removing it keeps an egress rule.
    assert.equal(codes([...base, broad, otherIngressOnly], 'RULE_REDUNDANT').length, 1);
    const alone = policy('shop', 'p', { podSelector: { matchLabels: { app: 'web' } }, egress: [{}] });
    assert.deepEqual(codes([...base, alone, otherIngressOnly], 'RULE_REDUNDANT'), []);
  });

  it('RULE_REDUNDANT: not when removing the last egress rule would open an endpoint it matters nothing to', () => {
    // v6only reaches nothing through the rule (IPv4 block), but it is isolated only because the
    // rule exists (implicit policyTypes); for web, "cover" allows the same.
    const v6only = pod('shop', 'v6only', { role: 'x' }, { ips: ['fd00::5'] });
    const p = policy('shop', 'p', {
      podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] },
      egress: [{ to: [{ ipBlock: { cidr: '203.0.113.0/24' } }], ports: [{ port: 443 }] }],
    });
    const withV6 = policy('shop', 'p', {
      podSelector: { matchExpressions: [{ key: 'role', operator: 'Exists' }] },
      egress: [{ to: [{ ipBlock: { cidr: '203.0.113.0/24' } }], ports: [{ port: 443 }] }],
    });
    const webLabelled = pod('shop', 'web2', { app: 'web', role: 'x' }, { ips: ['10.0.0.7'] });
    const cover = policy('shop', 'cover', {
      podSelector: { matchLabels: { app: 'web' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '203.0.113.0/24' } }], ports: [{ port: 443 }] }],
    });
    // Without the IPv6-only pod, the whole policy changes nothing.
    assert.equal(codes([...base, p, cover], 'POLICY_REDUNDANT').length, 1);
    assert.deepEqual(
      lint([...base, v6only, webLabelled, withV6, cover], ['POLICY_REDUNDANT', 'RULE_REDUNDANT']),
      [],
    );
  });
});

describe('lint: ordered policy', () => {
  const denyAll = anp('deny-all', 10, {
    ingress: [{ name: 'deny', action: 'Deny', from: [{ namespaces: {} }] }],
  });
  const allowShop = anp('allow-shop', 20, {
    ingress: [{ name: 'allow', action: 'Allow', from: [{ namespaces: { matchLabels: { team: 'shop' } } }] }],
  });

  it('RULE_SHADOWED: a rule after one of higher precedence matching everything it matches', () => {
    const found = codes([...base, denyAll, allowShop], 'RULE_SHADOWED');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.object, 'AdminNetworkPolicy allow-shop');
    assert.equal(found[0]?.path, 'spec.ingress[0]');
    assert.match(
      found[0]?.message ?? '',
      /anp\/deny-all ingress\[0\] "deny" decides everything it matches first/,
    );
    // In the other order, neither hides the other (the deny still decides for kube-system's pod);
    // without that pod, the allow would match every pod the deny does.
    const first = anp('allow-shop', 5, { ingress: (allowShop.spec as Raw).ingress });
    assert.deepEqual(codes([...base, coredns, denyAll, first], 'RULE_SHADOWED'), []);
    assert.equal(codes([...base, denyAll, first], 'RULE_SHADOWED').length, 1);
  });

  it("RULE_SHADOWED: a Calico rule behind a lower order's, located at the rule, one rule's verb singular", () => {
    const calico = (name: string, order: number, action: string): Raw => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: 'shop' },
      spec: {
        order,
        selector: 'all()',
        types: ['Egress'],
        egress: [{ action, protocol: 'TCP', destination: { ports: [6379] } }],
      },
    });
    const found = codes(
      [...base, calico('deny-cache', 50, 'Deny'), calico('allow-cache', 200, 'Allow')],
      'RULE_SHADOWED',
    );
    assert.equal(found.length, 1);
    assert.match(
      found[0]?.message ?? '',
      /calico\/shop\/deny-cache egress\[0\] decides everything it matches first/,
    );
    // At the rule, not where its object starts: findings name Calico's objects by their group.
    assert.equal(found[0]?.object, 'NetworkPolicy.projectcalico.org shop/allow-cache');
    assert.equal(found[0]?.path, 'spec.egress[0]');
    assert.ok((found[0]?.column ?? 0) > 1, `column ${found[0]?.column}`);
    // A GlobalNetworkPolicy, cluster-scoped, is found by its name alone.
    const global = (policy: Raw): Raw => {
      const { namespace: _, ...metadata } = policy.metadata as Record<string, unknown>;
      return { ...policy, kind: 'GlobalNetworkPolicy', metadata };
    };
    const [shadowed] = codes(
      [...base, global(calico('deny-cache', 50, 'Deny')), global(calico('allow-cache', 200, 'Allow'))],
      'RULE_SHADOWED',
    );
    assert.equal(shadowed?.object, 'GlobalNetworkPolicy.projectcalico.org allow-cache');
    assert.ok((shadowed?.column ?? 0) > 1, `column ${shadowed?.column}`);
  });

  it('RULE_SHADOWED: a Baseline rule for pods NetworkPolicy isolates', () => {
    const banp = {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'BaselineAdminNetworkPolicy',
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
    };
    const isolateAll = policy('shop', 'all', { podSelector: {}, policyTypes: ['Ingress'] });
    const found = codes([...base, banp, isolateAll], 'RULE_SHADOWED');
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /NetworkPolicy isolates every pod/);
    const isolateWeb = policy('shop', 'web', {
      podSelector: { matchLabels: { app: 'web' } },
      policyTypes: ['Ingress'],
    });
    assert.deepEqual(codes([...base, banp, isolateWeb], 'RULE_SHADOWED'), []);
  });

  it('PRIORITY_TIE: equal priorities over common pods are reported as findings', () => {
    const a = anp('a', 10, { ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    const b = anp('b', 10, { ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }] });
    const found = codes([...base, a, b], 'PRIORITY_TIE');
    assert.equal(found.length, 1);
    assert.match(found[0]?.hint ?? '', /distinct priorities/);
    assert.deepEqual(
      codes(
        [...base, a, anp('b', 11, { ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }] })],
        'PRIORITY_TIE',
      ),
      [],
    );
  });
});

describe('lint: selection of codes', () => {
  const messy = [
    ...base,
    policy('shop', 'ghost', {
      podSelector: { matchLabels: { app: 'x' } },
      ingress: [{ ports: [{ port: 53 }] }],
    }),
  ];

  it('reports every code by default, only the chosen ones with only, none of the skipped ones', () => {
    const loaded = load(messy);
    const all = lintCluster(loaded.cluster, {}).findings.map((f) => f.code);
    assert.ok(all.includes('POLICY_SELECTS_NOTHING') && all.includes('PORT_PROTOCOL_MISMATCH'));
    assert.deepEqual(
      [
        ...new Set(
          lintCluster(loaded.cluster, { only: ['PORT_PROTOCOL_MISMATCH'] }).findings.map((f) => f.code),
        ),
      ],
      ['PORT_PROTOCOL_MISMATCH'],
    );
    assert.ok(
      !lintCluster(loaded.cluster, { skip: ['PORT_PROTOCOL_MISMATCH'] }).findings.some(
        (f) => f.code === 'PORT_PROTOCOL_MISMATCH',
      ),
    );
  });
});
