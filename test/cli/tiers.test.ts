/**
 * Cluster policy from the command line: the tier walk in `check` (text and JSON), domain-name
 * destinations, `validate` counts, and `convert --to v1alpha2` giving the same answers.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const INPUT = [
  '-f',
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
  'examples/tiers',
];

describe('cluster policy in the CLI', () => {
  it('check prints the tier walk', async () => {
    const r = await cli([
      'check',
      ...INPUT,
      '--from',
      'payments/gateway-6d4f-b7n3v',
      '--to',
      'shop/api-5f6b-m9w1c',
      '--port',
      'http',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /DENIED/);
    assert.match(
      r.stdout,
      /\[Admin\] pass \(anp\/monitoring, rule 2 "delegate-the-rest"\) → \[NetworkPolicy\] denied \(shop\/api, shop\/default-deny\)/,
    );
  });

  it('check -o json gives the walk as data', async () => {
    const r = await cli([
      'check',
      ...INPUT,
      '--from',
      'shop/api-5f6b-m9w1c',
      '--to',
      'monitoring/prometheus-0',
      '--port',
      '9090',
      '-o',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const walk = (
      JSON.parse(r.stdout) as {
        verdict: { ingress: { walk: { tier: string; outcome: string; policy?: string }[] } };
      }
    ).verdict.ingress.walk;
    assert.deepEqual(
      walk.map((s) => [s.tier, s.outcome, s.policy ?? null]),
      [
        ['Admin', 'pass', 'anp/monitoring'],
        ['NetworkPolicy', 'not-isolated', null],
        ['Baseline', 'deny', 'banp/default'],
      ],
    );
  });

  it('a destination can be named for domainNames peers, and a bare name is refused with a hint', async () => {
    const named = await cli([
      'check',
      ...INPUT,
      '--from',
      'payments/gateway-6d4f-b7n3v',
      '--to',
      'api.stripe.com=203.0.113.10',
      '--port',
      '443',
      '--expect',
      'allow',
    ]);
    assert.equal(named.code, 0, named.stdout);
    const bare = await cli([
      'check',
      ...INPUT,
      '--from',
      'payments/gateway-6d4f-b7n3v',
      '--to',
      '203.0.113.10',
      '--port',
      '443',
      '--expect',
      'deny',
    ]);
    assert.equal(bare.code, 0, bare.stdout);
    const nameOnly = await cli([
      'check',
      ...INPUT,
      '--from',
      'payments/gateway-6d4f-b7n3v',
      '--to',
      'api.stripe.com',
      '--port',
      '443',
    ]);
    assert.equal(nameOnly.code, 2);
    assert.match(nameOnly.stderr, /api\.stripe\.com=IP/);
    assert.doesNotMatch(nameOnly.stderr, /\n\s+at /);
  });

  it('validate counts cluster policies', async () => {
    const r = await cli(['validate', '-f', 'examples/tiers']);
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /4 cluster policies/);
  });

  it('compile lists the tiered tables; render --target nftables renders them as chains and warns about domain names', async () => {
    const compiled = await cli(['compile', ...INPUT]);
    assert.equal(compiled.code, 0, compiled.stderr);
    assert.match(compiled.stdout, /tiered tables \(\d+ distinct/);
    assert.match(compiled.stdout, /pass ANY group:nssel=\* -> any port any @\d+/);
    const rendered = await cli(['render', '--target', 'nftables', '--node', 'node-1', ...INPUT]);
    assert.equal(rendered.code, 0, rendered.stderr);
    assert.match(rendered.stdout, /chain s_[0-9a-f]{16} \{/);
    assert.match(rendered.stdout, /goto c_[0-9a-f]{16}/);
    assert.match(rendered.stderr, /DOMAIN_NAMES_NOT_ENFORCED/);
  });

  it('neutron, which cannot express ordered policy, says so and renders nothing', async () => {
    const r = await cli(['render', '--target', 'neutron', ...INPUT]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^palisade: render --target neutron cannot express ordered cluster policy/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  it('the VPP targets and compile --node flatten the tiers into their tables, and say what VPP does not police', async () => {
    const acl = await cli(['render', '--target', 'vpp-acl', '--node', 'node-1', ...INPUT]);
    assert.equal(acl.code, 0, acl.stderr);
    assert.match(
      acl.stderr,
      /node node-1: ordered cluster policy of 4 pods is not enforced on traffic between a pod and its own node/,
    );
    const acls =
      (
        JSON.parse(acl.stdout) as {
          nodes: {
            acls: {
              name: string;
              rules: { action: string; ip_rule: { ip: { destination_network: string } } }[];
            }[];
          }[];
        }
      ).nodes[0]?.acls ?? [];
    // The Admin deny of the metadata address, ahead of the NetworkPolicy tier, in the global ACL.
    const global = acls.find((a) => a.name === 'global');
    assert.ok(
      global?.rules.some(
        (r) => r.action === 'DENY' && r.ip_rule.ip.destination_network === '169.254.169.254/32',
      ),
    );
    const tcp = await cli(['render', '--target', 'vpptcp', '--node', 'node-1', ...INPUT]);
    assert.equal(tcp.code, 0, tcp.stderr);
    const compiled = await cli(['compile', '--node', 'node-1', ...INPUT]);
    assert.equal(compiled.code, 0, compiled.stderr);
    assert.match(compiled.stdout, /ordered cluster policy flattened into the tables of 4 pods/);
    // frontend accepts TCP/8080 from anywhere, but the Admin tier denies the monitoring pod first.
    assert.match(
      compiled.stdout,
      /deny ANY 10\.244\.2\.12\/32 -> any port any\n\s+\d+\s+permit TCP any -> any port 8080/,
    );
  });

  it('convert --to v1alpha2 rewrites ANP and BANP as ClusterNetworkPolicy with the same matrix', async (t) => {
    const converted = await cli(['convert', '--to', 'v1alpha2', '-f', 'examples/tiers']);
    assert.equal(converted.code, 0, converted.stderr);
    assert.doesNotMatch(converted.stdout, /kind: (Admin|BaselineAdmin)NetworkPolicy/);
    assert.match(converted.stderr, /anp\/monitoring became cnp\/monitoring/);
    const dir = await tempDir(t, 'palisade-cnp-');
    await writeFile(join(dir, 'converted.yaml'), converted.stdout);
    const before = await cli(['matrix', ...INPUT, '-o', 'json']);
    const after = await cli(['matrix', ...INPUT.slice(0, -1), dir, '-o', 'json']);
    assert.equal(before.code, 0, before.stderr);
    assert.equal(after.code, 0, after.stderr);
    const results = (text: string) => (JSON.parse(text) as { results: { allowed: boolean }[] }).results;
    assert.ok(
      results(before.stdout).some((r) => !r.allowed),
      'the example denies something',
    );
    assert.deepEqual(results(after.stdout), results(before.stdout));
  });
});
