/**
 * An outside peer's nets (Cilium's CIDR rules): its blocks less every node's address. Only the
 * addresses inside a block are looked up and subtracted; the result must be the block less all
 * of them, for blocks holding none, some or all of the nodes, in both families.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/generate/random.ts';
import type { ClusterRule } from '../../src/model/cluster-policy.ts';
import { readRuleFacts } from '../../src/model/cluster-policy-facts.ts';
import type { NodeInfo } from '../../src/model/types.ts';
import { hostCidr, makeCidr, type Cidr } from '../../src/net/ip.ts';
import { subtractCidrs } from '../../src/net/subtract.ts';
import { ClusterState, clusterRuleNets } from '../../src/state/index.ts';

function outsideTexts(blocks: readonly Cidr[], nodes: readonly NodeInfo[]): string[] {
  const rule: ClusterRule = { index: 0, action: 'allow', peers: [{ type: 'outside', cidrs: blocks }] };
  return clusterRuleNets(rule, readRuleFacts(rule), {}, nodes).map((net) =>
    net.kind === 'outside' ? net.cidr.text : net.kind,
  );
}

describe("an outside peer's nets", () => {
  it('are its blocks less the nodes inside them, whatever the nodes and blocks', () => {
    const random = seededRandom(11);
    for (let run = 0; run < 200; run++) {
      const family = random() < 0.5 ? 4 : 6;
      const bits = family === 4 ? 32 : 128;
      // Addresses near each other, so that blocks hold some nodes and miss others.
      const address = (): bigint =>
        (family === 4 ? 0x0a000000n : 0xfd00n << 112n) + BigInt(Math.floor(random() * 4096));
      const nodes: NodeInfo[] = Array.from({ length: Math.floor(random() * 30) }, (_, i) => ({
        name: `node-${i}`,
        labels: {},
        declared: true,
        addresses: [{ family, value: address() }],
      }));
      const blocks = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
        const prefix = bits - 1 - Math.floor(random() * 12);
        const base = (address() >> BigInt(bits - prefix)) << BigInt(bits - prefix);
        return makeCidr(family, base, prefix);
      });
      const hosts = nodes.flatMap((n) => n.addresses.map(hostCidr));
      const expected = blocks.flatMap((block) => subtractCidrs(block, hosts).map((c) => c.text));
      assert.deepEqual(outsideTexts(blocks, nodes), expected, `run ${run}`);
    }
  });

  it('leave a block holding no node whole, and cut one holding a node around it', () => {
    const node = (name: string, value: bigint): NodeInfo => ({
      name,
      labels: {},
      declared: true,
      addresses: [{ family: 4, value }],
    });
    const nodes = [node('a', 0xac100001n), node('b', 0x0a000001n)]; // 172.16.0.1, 10.0.0.1
    assert.deepEqual(outsideTexts([makeCidr(4, 0xc0a80000n, 16)], nodes), ['192.168.0.0/16']);
    const cut = outsideTexts([makeCidr(4, 0x0a000000n, 30)], nodes);
    assert.deepEqual(cut, ['10.0.0.0/32', '10.0.0.2/31']);
  });

  it('are cut by one list of nodes for every store with the same nodes, and anew when a node changes', () => {
    const node = (name: string, value: bigint, labels = {}): NodeInfo => ({
      name,
      labels,
      declared: true,
      addresses: [{ family: 4, value }],
    });
    const storeWith = (nodes: readonly NodeInfo[]): ClusterState => {
      const store = new ClusterState();
      for (const n of nodes) store.upsertNode(n);
      return store;
    };
    const a = node('a', 0x0a000001n);
    const b = node('b', 0x0a000005n, { zone: 'z1' });
    const first = storeWith([a, b]);
    // Another store (the matrix's classes beside the compile), its nodes given in another order.
    const second = storeWith([{ ...b, labels: { zone: 'z1' } }, { ...a }]);
    assert.equal(second.nodes(), first.nodes());
    const block = [makeCidr(4, 0x0a000000n, 29)];
    assert.deepEqual(outsideTexts(block, second.nodes()), [
      '10.0.0.0/32',
      '10.0.0.2/31',
      '10.0.0.4/32',
      '10.0.0.6/31',
    ]);
    // A node's labels or address changed: another list, and the blocks cut by the new addresses.
    const relabelled = storeWith([a, { ...b, labels: { zone: 'z2' } }]);
    assert.notEqual(relabelled.nodes(), first.nodes());
    const moved = storeWith([a, node('b', 0x0a000003n, { zone: 'z1' })]);
    assert.notEqual(moved.nodes(), first.nodes());
    assert.deepEqual(outsideTexts(block, moved.nodes()), ['10.0.0.0/32', '10.0.0.2/32', '10.0.0.4/30']);
    // The first store changes its own nodes: its list follows, the second store's stays.
    first.upsertNode(node('c', 0x0a000007n));
    assert.notEqual(first.nodes(), second.nodes());
    assert.deepEqual(outsideTexts(block, first.nodes()), [
      '10.0.0.0/32',
      '10.0.0.2/31',
      '10.0.0.4/32',
      '10.0.0.6/32',
    ]);
    assert.deepEqual(outsideTexts(block, second.nodes()), [
      '10.0.0.0/32',
      '10.0.0.2/31',
      '10.0.0.4/32',
      '10.0.0.6/31',
    ]);
  });
});
