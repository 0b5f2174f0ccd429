/**
 * The Neutron renderer: rendered security groups, interpreted with Neutron's allow-list
 * semantics, give the reference evaluator's verdict for every packet (IPv4 and IPv6, named
 * ports, ipBlocks with except); the Kuryr seed's example gives the rules the seed lists; a second
 * rendering against the first yields only the API calls needed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { ClusterState } from '../../src/state/index.ts';
import { neutronRequests, renderNeutron, type NeutronRendering } from '../../src/datapaths/neutron/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { neutronVerdicts } from '../helpers/renderer-verdicts.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { cli } from '../helpers/cli.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function render(cluster: Cluster): NeutronRendering {
  const state = new ClusterState();
  state.resync(cluster);
  return renderNeutron(state);
}

describe('Neutron renderer', () => {
  it('security groups ≡ reference evaluator on random clusters', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 4 }), (objects) => {
        const cluster = clusterOf(objects);
        assertAgreesWithReference(cluster, neutronVerdicts(cluster), 'neutron: ');
      }),
      { numRuns: RUNS },
    );
  });

  it("renders the Kuryr seed's test-network-policy as the rules the seed lists", async () => {
    const { cluster } = await loadCluster([
      new URL('../fixtures/docs-example.yaml', import.meta.url).pathname,
    ]);
    const rendering = render(cluster);
    const group = rendering.security_groups.find((g) => g.name === 'np-default-test-network-policy');
    assert.ok(group);
    const summary = group.rules.map(
      (r) =>
        `${r.direction} ${r.ethertype} ${r.protocol}:${r.port_range_min ?? ''} ${r.remote_ip_prefix ?? (r.remote_group_id ? 'group' : 'any')}`,
    );
    assert.deepEqual(
      summary.filter((s) => s.startsWith('ingress') && !s.endsWith('group')),
      [
        'ingress IPv4 tcp:6379 172.17.0.0/24',
        'ingress IPv4 tcp:6379 172.17.2.0/23',
        'ingress IPv4 tcp:6379 172.17.4.0/22',
        'ingress IPv4 tcp:6379 172.17.8.0/21',
        'ingress IPv4 tcp:6379 172.17.16.0/20',
        'ingress IPv4 tcp:6379 172.17.32.0/19',
        'ingress IPv4 tcp:6379 172.17.64.0/18',
        'ingress IPv4 tcp:6379 172.17.128.0/17',
      ],
    );
    // The seed's "[uid]_in" remote group: here one peer group per selector, both ethertypes.
    assert.equal(summary.filter((s) => s.startsWith('ingress') && s.endsWith('group')).length, 4);
    assert.deepEqual(
      summary.filter((s) => s.startsWith('egress')),
      ['egress IPv4 tcp:5978 10.0.0.0/24'],
    );
    const db = rendering.ports.find((p) => p.pod === 'default/db');
    assert.ok(db?.security_groups.includes('np-default-test-network-policy'));
  });

  it("renders the seed document's two policies as recorded in test/golden (UPDATE_GOLDEN=1 rewrites it)", async () => {
    const result = await cli(['render', '--target', 'neutron', '-f', 'examples/kuryr/seed-examples.yaml']);
    assert.equal(result.code, 0, result.stderr);
    const file = new URL('../golden/neutron-kuryr-seed.json', import.meta.url);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, result.stdout);
    assert.equal(result.stdout, readFileSync(file, 'utf8'), 'golden neutron-kuryr-seed.json differs');
  });

  it('puts an ingress named port into a group per resolved number, bound only to the pods that resolve it', () => {
    const cluster = clusterOf([
      namespace('default'),
      pod(
        'default',
        'server-a',
        { app: 'server' },
        { ips: ['10.0.0.231'], ports: [{ name: 'serve', containerPort: 80 }] },
      ),
      pod(
        'default',
        'server-b',
        { app: 'server' },
        { ips: ['10.0.0.232'], ports: [{ name: 'serve', containerPort: 8080 }] },
      ),
      policy('default', 'allow-via-named-port', {
        podSelector: { matchLabels: { app: 'server' } },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ protocol: 'TCP', port: 'serve' }] }],
      }),
    ]);
    const rendering = render(cluster);
    const a = rendering.ports.find((p) => p.pod === 'default/server-a');
    assert.ok(a?.security_groups.includes('np-default-allow-via-named-port-serve-tcp-80'));
    assert.ok(!a?.security_groups.includes('np-default-allow-via-named-port-serve-tcp-8080'));
    const group = rendering.security_groups.find(
      (g) => g.name === 'np-default-allow-via-named-port-serve-tcp-80',
    );
    assert.deepEqual(group?.rules[0]?.remote_ip_prefixes, { '10.0.0.231': 'default' });
    assert.ok(a?.security_groups.includes('allow-all-egress'), 'not isolated for egress');
  });

  it('sends only the API calls a change needs, and skips policies whose generation is unchanged', () => {
    const objects = [
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'] }),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'] }),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }],
      }),
    ];
    const first = render(clusterOf(objects));
    const everything = neutronRequests(undefined, first);
    assert.ok(everything.some((r) => r.method === 'POST' && r.path === '/v2.0/security-groups'));
    assert.deepEqual(neutronRequests(first, first), [], 'no change, no calls');
    const widened = [
      ...objects.slice(0, 3),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ ports: [{ port: 5432 }] }],
      }),
    ];
    const second = render(clusterOf(widened));
    const calls = neutronRequests(first, second);
    assert.ok(calls.some((c) => c.method === 'POST' && c.path === '/v2.0/security-group-rules'));
    assert.ok(calls.some((c) => c.method === 'DELETE' && c.path.startsWith('/v2.0/security-group-rules/')));
    assert.ok(
      calls.some((c) => c.method === 'DELETE' && c.path.startsWith('/v2.0/security-groups/sg:peer-')),
      'the unused peer group goes',
    );
    assert.ok(calls.length < everything.length);
  });
});
