/**
 * The tier walk of the reference evaluator, one behaviour per test, from the API text:
 * Admin (priority, rule order; Allow/Deny end the walk, Pass skips to NetworkPolicy), then
 * NetworkPolicy (final for isolated pods), then Baseline, then default allow.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowed,
  clusterOf,
  endpoint,
  ipOf,
  load,
  namespace,
  pod,
  policy,
  verdict,
  type Raw,
} from '../helpers/builders.ts';
import { describeStep } from '../../src/semantics/tiers.ts';
import { evaluate } from '../../src/semantics/evaluate.ts';
import { indexCluster } from '../../src/semantics/match.ts';

const anp = (name: string, priority: number, spec: Raw): Raw => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'AdminNetworkPolicy',
  metadata: { name },
  spec: { priority, subject: { namespaces: {} }, ...spec },
});
const banp = (spec: Raw): Raw => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'BaselineAdminNetworkPolicy',
  metadata: { name: 'default' },
  spec: { subject: { namespaces: {} }, ...spec },
});
const cnp = (name: string, tier: string, priority: number, spec: Raw): Raw => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: { tier, priority, subject: { namespaces: {} }, ...spec },
});
const node = (name: string, ip: string, labels: Record<string, string>): Raw => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
});
const fromAll = [{ namespaces: {} }];

const BASE: Raw[] = [
  namespace('shop', { team: 'shop' }),
  namespace('ops', { team: 'ops' }),
  pod(
    'shop',
    'web',
    { app: 'web' },
    { ips: ['10.0.0.1'], node: 'n1', hostIp: '192.168.0.1', ports: [{ name: 'http', containerPort: 8080 }] },
  ),
  pod(
    'shop',
    'db',
    { app: 'db' },
    {
      ips: ['10.0.0.2'],
      node: 'n2',
      hostIp: '192.168.0.2',
      ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }],
    },
  ),
  pod('ops', 'probe', { app: 'probe' }, { ips: ['10.0.1.1'], node: 'n1', hostIp: '192.168.0.1' }),
  pod(
    'ops',
    'agent',
    { app: 'agent' },
    { ips: ['192.168.0.2'], node: 'n2', hostIp: '192.168.0.2', hostNetwork: true },
  ),
  node('n1', '192.168.0.1', { zone: 'a' }),
  node('n2', '192.168.0.2', { zone: 'b' }),
];
const denyAllShop = policy('shop', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
const allowProbe = policy('shop', 'allow-probe', {
  podSelector: {},
  ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }] }],
});

describe('tier walk', () => {
  it('an Admin Deny overrides a NetworkPolicy allow, and an Admin Allow overrides NetworkPolicy isolation', () => {
    const deny = clusterOf([
      ...BASE,
      allowProbe,
      anp('no-ops', 1, {
        ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { team: 'ops' } } }] }],
      }),
    ]);
    assert.equal(allowed(deny, 'ops/probe', 'shop/web', 8080), false);
    const v = verdict(deny, 'ops/probe', 'shop/web', 8080);
    assert.equal(v.ingress.status, 'denied-by-admin');
    assert.equal(v.ingress.walk.map(describeStep).join(' → '), '[Admin] denied (anp/no-ops, rule 0)');

    const allow = clusterOf([
      ...BASE,
      denyAllShop,
      anp('let-ops', 1, { ingress: [{ action: 'Allow', from: fromAll }] }),
    ]);
    assert.equal(allowed(allow, 'ops/probe', 'shop/web', 8080), true);
    assert.equal(verdict(allow, 'ops/probe', 'shop/web', 8080).ingress.status, 'allowed-by-admin');
  });

  it('Pass hands over to NetworkPolicy, and past it to the Baseline tier when no NetworkPolicy isolates the pod', () => {
    const pass = anp('delegate', 1, { ingress: [{ action: 'Pass', from: fromAll }] });
    const denyBaseline = banp({ ingress: [{ action: 'Deny', from: fromAll }] });
    const withNp = clusterOf([...BASE, pass, allowProbe, denyBaseline]);
    assert.equal(allowed(withNp, 'ops/probe', 'shop/web', 8080), true);
    assert.deepEqual(
      verdict(withNp, 'ops/probe', 'shop/web', 8080).ingress.walk.map((s) => `${s.tier}:${s.outcome}`),
      ['Admin:pass', 'NetworkPolicy:allow'],
    );
    const withoutNp = clusterOf([...BASE, pass, denyBaseline]);
    const v = verdict(withoutNp, 'ops/probe', 'shop/web', 8080);
    assert.equal(v.allowed, false);
    assert.deepEqual(
      v.ingress.walk.map((s) => `${s.tier}:${s.outcome}`),
      ['Admin:pass', 'NetworkPolicy:not-isolated', 'Baseline:deny'],
    );
  });

  it('Pass skips the rest of the Admin tier, including lower-priority policies', () => {
    const cluster = clusterOf([
      ...BASE,
      anp('first', 1, { ingress: [{ action: 'Pass', from: fromAll }] }),
      anp('second', 2, { ingress: [{ action: 'Deny', from: fromAll }] }),
    ]);
    assert.equal(allowed(cluster, 'ops/probe', 'shop/web', 8080), true);
  });

  it('lower priority numbers go first, then rule order', () => {
    const cluster = clusterOf([
      ...BASE,
      anp('late', 20, { ingress: [{ action: 'Allow', from: fromAll }] }),
      anp('early', 10, {
        ingress: [
          { action: 'Deny', from: fromAll, ports: [{ portNumber: { port: 8080 } }] },
          { action: 'Allow', from: fromAll },
        ],
      }),
    ]);
    assert.equal(allowed(cluster, 'ops/probe', 'shop/web', 8080), false);
    assert.equal(verdict(cluster, 'ops/probe', 'shop/web', 9000).ingress.walk[0]?.policy, 'anp/early');
    assert.equal(verdict(cluster, 'ops/probe', 'shop/web', 9000).ingress.walk[0]?.rule, 1);
  });

  it('a fail-closed peer: an Allow rule matches nothing, a Deny or Pass rule denies everything', () => {
    const unknownPeer = [{ serviceAccounts: { name: 'x' } }];
    const allowRule = clusterOf([
      ...BASE,
      denyAllShop,
      anp('a', 1, { ingress: [{ action: 'Allow', from: unknownPeer }] }),
    ]);
    assert.equal(allowed(allowRule, 'ops/probe', 'shop/web', 8080), false);
    for (const action of ['Deny', 'Pass']) {
      const cluster = clusterOf([
        ...BASE,
        allowProbe,
        anp('a', 1, { ingress: [{ action, from: unknownPeer }] }),
      ]);
      assert.equal(allowed(cluster, 'ops/probe', 'shop/web', 8080), false, action);
    }
  });

  it('a named port means the destination container port of that name, whatever its protocol', () => {
    const cluster = clusterOf([
      ...BASE,
      anp('dns-only', 1, {
        ingress: [
          { action: 'Allow', from: fromAll, ports: [{ namedPort: 'dns' }] },
          { action: 'Deny', from: fromAll },
        ],
      }),
    ]);
    assert.equal(allowed(cluster, 'ops/probe', 'shop/db', 53, 'UDP'), true);
    assert.equal(allowed(cluster, 'ops/probe', 'shop/db', 53, 'TCP'), false);
    assert.equal(allowed(cluster, 'ops/probe', 'shop/web', 53, 'UDP'), false);
  });

  it('networks match pod addresses too; nodes match node addresses and host-network pods', () => {
    const cluster = clusterOf([
      ...BASE,
      anp('egress', 1, {
        subject: { namespaces: { matchLabels: { team: 'shop' } } },
        egress: [
          { action: 'Deny', to: [{ nodes: { matchLabels: { zone: 'b' } } }] },
          { action: 'Deny', to: [{ networks: ['10.0.1.0/24'] }] },
        ],
      }),
    ]);
    assert.equal(allowed(cluster, 'shop/web', 'ops/probe', 80), false, 'pod IP in networks');
    assert.equal(allowed(cluster, 'shop/web', 'ops/agent', 80), false, 'host-network pod on a zone=b node');
    assert.equal(allowed(cluster, 'shop/web', '192.168.0.2', 80), false, 'node address');
    assert.equal(allowed(cluster, 'shop/web', '192.168.0.1', 80), true, 'zone=a node');
  });

  it('pods and namespaces peers never select host-network pods, and host-network pods are never subjects', () => {
    const cluster = clusterOf([
      ...BASE,
      anp('deny-ops', 1, {
        egress: [{ action: 'Deny', to: [{ namespaces: { matchLabels: { team: 'ops' } } }] }],
      }),
    ]);
    assert.equal(allowed(cluster, 'shop/web', 'ops/probe', 80), false);
    assert.equal(allowed(cluster, 'shop/web', 'ops/agent', 80), true);
    assert.equal(verdict(cluster, 'ops/agent', 'shop/web', 8080).egress.status, 'host-network');
  });

  it('cluster policy judges traffic to the own node; NetworkPolicy isolation still allows it', () => {
    const toNodes = anp('no-nodes', 1, { egress: [{ action: 'Deny', to: [{ nodes: {} }] }] });
    assert.equal(allowed(clusterOf([...BASE, toNodes]), 'shop/web', '192.168.0.1', 10250), false);
    const np = clusterOf([...BASE, denyAllShop]);
    const v = verdict(np, 'shop/web', '192.168.0.1', 10250);
    assert.equal(v.allowed, true);
    assert.equal(v.egress.status, 'node-local');
  });

  it('v0.1.1 sameLabels and notSameLabels select namespaces relative to the subject', () => {
    const objects = [
      namespace('a1', { team: 'a', env: 'prod' }),
      namespace('a2', { team: 'a', env: 'dev' }),
      namespace('b1', { team: 'b', env: 'prod' }),
      pod('a1', 'x', {}, { ips: ['10.1.0.1'] }),
      pod('a2', 'y', {}, { ips: ['10.1.0.2'] }),
      pod('b1', 'z', {}, { ips: ['10.1.0.3'] }),
    ];
    const same = clusterOf([
      ...objects,
      anp('same-team', 1, {
        ingress: [
          { action: 'Allow', from: [{ namespaces: { sameLabels: ['team'] } }] },
          { action: 'Deny', from: [{ namespaces: { namespaceSelector: {} } }] },
        ],
      }),
    ]);
    assert.equal(allowed(same, 'a2/y', 'a1/x', 80), true);
    assert.equal(allowed(same, 'b1/z', 'a1/x', 80), false);
    const notSame = clusterOf([
      ...objects,
      anp('other-env', 1, {
        ingress: [{ action: 'Deny', from: [{ namespaces: { notSameLabels: ['env'] } }] }],
      }),
    ]);
    assert.equal(allowed(notSame, 'a2/y', 'a1/x', 80), false);
    assert.equal(allowed(notSame, 'b1/z', 'a1/x', 80), true);
  });

  it('domainNames match a destination given by name, exactly or under a *. wildcard', () => {
    const cluster = clusterOf([
      ...BASE,
      cnp('names', 'Admin', 1, {
        egress: [
          { action: 'Accept', to: [{ domainNames: ['example.com', '*.example.org'] }] },
          { action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] },
        ],
      }),
    ]);
    const index = indexCluster(cluster);
    const web = endpoint(cluster, 'shop/web');
    const to = (domain: string | undefined): boolean =>
      evaluate(index, {
        src: { kind: 'endpoint', endpoint: web },
        dst: { kind: 'ip', ip: ipOf('203.0.113.1'), ...(domain ? { domain } : {}) },
        protocol: 'TCP',
        port: 443,
      }).allowed;
    assert.equal(to(undefined), false, 'no name: only the networks rule can match');
    assert.equal(to('example.com'), true);
    assert.equal(to('www.example.com'), false, 'example.com is exact');
    assert.equal(to('a.b.example.org'), true, '*. matches one or more labels');
    assert.equal(to('example.org'), false, '*. needs at least one label');
  });

  it('a Baseline ClusterNetworkPolicy ranks before the BaselineAdminNetworkPolicy', () => {
    const cluster = clusterOf([
      ...BASE,
      cnp('open-dns', 'Baseline', 1000, {
        egress: [{ action: 'Accept', to: [{ networks: ['0.0.0.0/0'] }] }],
      }),
      banp({ egress: [{ action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] }] }),
    ]);
    assert.equal(allowed(cluster, 'shop/web', '8.8.8.8', 53, 'UDP'), true);
  });

  it('loads without errors what the tests above build', () => {
    const { diagnostics } = load([...BASE, denyAllShop]);
    assert.deepEqual(
      diagnostics.filter((d) => d.severity === 'error'),
      [],
    );
  });
});
