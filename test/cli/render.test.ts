/**
 * `palisade render` and `palisade lab` from the command line: usage errors and every target's
 * output (applied to a network namespace: render-apply.root.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRoot } from '../../src/dataplane/index.ts';
import { cli } from '../helpers/cli.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SHOP = [
  '-f',
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
];
/** `palisade render --target nftables --node node-1 …` on the running shop. */
const nftablesNode1 = (...args: string[]) =>
  cli(['render', '--target', 'nftables', '--node', 'node-1', ...args, ...SHOP]);

describe('palisade render', () => {
  it('refuses unknown targets, unknown nodes and bad pod CIDRs with a usage error', async () => {
    const target = await cli(['render', '--target', 'xdp', '--node', 'node-1', ...SHOP]);
    assert.equal(target.code, 2);
    assert.match(target.stderr, /--target must be one of nftables, ebpf, bitmap, vpp-acl, vpptcp, neutron/);
    const node = await cli(['render', '--target', 'nftables', '--node', 'node-9', ...SHOP]);
    assert.equal(node.code, 2);
    assert.match(node.stderr, /no pod in the input runs on node "node-9"/);
    const output = await nftablesNode1('-o', 'json');
    assert.equal(output.code, 2);
    assert.match(output.stderr, /--output must be one of text/);
    const cidr = await nftablesNode1('--pod-cidr', '10.244.1.0/33');
    assert.equal(cidr.code, 2);
    assert.match(cidr.stderr, /--pod-cidr 10\.244\.1\.0\/33/);
  });

  it('prints counts with --stats and fail-closed guards for --pod-cidr', async () => {
    const result = await nftablesNode1('--pod-cidr', '10.244.1.0/24', '--stats');
    assert.equal(result.code, 0);
    assert.match(result.stderr, /^\d+ chains, \d+ rules, \d+ sets, \d+ set elements, 16 dispatch entries\n$/);
    assert.match(result.stdout, /elements = \{ 10\.244\.1\.0\/24 \}/);
    assert.match(result.stdout, /ip daddr @podcidr_4 drop/);
  });
});

describe('palisade render --target vpp-acl', () => {
  it("prints every node's ligato ACLs as JSON: local ACLs on pod TAPs, the global ACL on the uplinks, reflection", async () => {
    const result = await cli(['render', '--target', 'vpp-acl', ...SHOP]);
    assert.equal(result.code, 0, result.stderr);
    const parsed = JSON.parse(result.stdout) as {
      nodes: {
        node: string;
        acls: { name: string; interfaces: { egress: string[]; ingress: string[] } }[];
      }[];
    };
    assert.deepEqual(
      parsed.nodes.map((n) => n.node),
      ['node-1', 'node-2'],
    );
    const node1 = parsed.nodes[0]?.acls ?? [];
    assert.ok(node1.some((a) => a.name === 'global' && a.interfaces.egress.includes('vxlanBVI')));
    assert.ok(
      node1.some(
        (a) => a.name.startsWith('local-') && a.interfaces.egress.includes('tap-shop-api-5f6b-m9w1c'),
      ),
    );
    assert.equal(node1.find((a) => a.name === 'REFLECTION')?.interfaces.ingress.length, 4);
    const one = await cli(['render', '--target', 'vpp-acl', '--node', 'node-2', ...SHOP]);
    assert.deepEqual(
      (JSON.parse(one.stdout) as { nodes: { node: string }[] }).nodes.map((n) => n.node),
      ['node-2'],
    );
  });
});

describe('palisade render --target vpptcp', () => {
  it("prints every node's session rules with each pod's application namespace", async () => {
    const result = await cli(['render', '--target', 'vpptcp', '--node', 'node-2', ...SHOP]);
    assert.equal(result.code, 0, result.stderr);
    const parsed = JSON.parse(result.stdout) as {
      nodes: {
        node: string;
        namespaces: { pod: string }[];
        rules: { scope: number; lcl: string; lcl_port: number }[];
      }[];
    };
    const node2 = parsed.nodes[0];
    assert.equal(node2?.node, 'node-2');
    assert.deepEqual(
      node2?.namespaces.map((n) => n.pod),
      ['monitoring/prometheus-0', 'shop/db-0', 'shop/frontend-7c9d-q8m2z'],
    );
    // db accepts 5432 from api (on node-1): a global rule for connections coming in.
    assert.ok(node2?.rules.some((r) => r.scope === 1 && r.lcl === '10.244.2.11/32' && r.lcl_port === 5432));
  });
});

describe('palisade render --target neutron', () => {
  it('prints security groups, port bindings and the API calls; with --previous only the calls needed', async () => {
    const first = await cli(['render', '--target', 'neutron', ...SHOP]);
    assert.equal(first.code, 0, first.stderr);
    const parsed = JSON.parse(first.stdout) as {
      security_groups: { name: string }[];
      ports: unknown[];
      requests: unknown[];
    };
    assert.ok(parsed.security_groups.some((g) => g.name === 'np-shop-db'));
    assert.equal(parsed.ports.length, 7);
    const dir = mkdtempSync(join(tmpdir(), 'palisade-neutron-'));
    try {
      writeFileSync(join(dir, 'previous.json'), first.stdout);
      const again = await cli([
        'render',
        '--target',
        'neutron',
        '--previous',
        join(dir, 'previous.json'),
        ...SHOP,
      ]);
      assert.deepEqual((JSON.parse(again.stdout) as { requests: unknown[] }).requests, []);
      writeFileSync(join(dir, 'bad.json'), '{"x": 1}');
      const bad = await cli(['render', '--target', 'neutron', '--previous', join(dir, 'bad.json'), ...SHOP]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /not an output of 'palisade render --target neutron'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('palisade render --target bitmap', () => {
  it("prints each endpoint's maps in the seed's schema, with what every bit stands for", async () => {
    const result = await cli(['render', '--target', 'bitmap', '-f', 'test/fixtures/docs-example.yaml']);
    assert.equal(result.code, 0, result.stderr);
    const parsed = JSON.parse(result.stdout) as {
      endpoints: {
        endpoint: string;
        ingress: {
          enforce: unknown[];
          supp?: { cidr: string }[];
          except?: { cidr: string }[];
          slots?: { rule: string }[];
        };
      }[];
    };
    const db = parsed.endpoints.find((e) => e.endpoint === 'default/db');
    assert.deepEqual(
      db?.ingress.supp?.map((e) => e.cidr),
      ['172.17.0.0/16'],
    );
    assert.deepEqual(
      db?.ingress.except?.map((e) => e.cidr),
      ['172.17.1.0/24'],
    );
    assert.ok(db?.ingress.slots?.some((s) => s.rule.startsWith('default/test-network-policy ingress[0]')));
    assert.deepEqual(parsed.endpoints.find((e) => e.endpoint === 'default/frontend')?.ingress.enforce, []);
  });
});

describe('palisade lab', () => {
  it('says which lab is not up, in one line', async () => {
    const result = await cli([
      'lab',
      'probe',
      '--name',
      'nothing-here',
      '--state-dir',
      '/tmp/palisade-no-labs',
    ]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      isRoot() ? /^palisade: no lab "nothing-here" is up/ : /^palisade: the lab needs root/,
    );
  });

  it('rejects bad options with a usage error', async () => {
    const result = await cli(['lab', 'probe', '--timeout', '5']);
    assert.equal(result.code, isRoot() ? 2 : 1);
  });
});
