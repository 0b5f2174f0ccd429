/**
 * The compiled tables, interpreted by the table evaluator, agree with the reference evaluator on
 * every packet between pod addresses, node addresses and outside addresses, for several ports
 * and protocols, IPv4 and IPv6, on random clusters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compiledAllows,
  Configurator,
  stateGroupLookup,
  type CompiledView,
  type PodTables,
} from '../../src/configurator/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import { ruleText, type Rule } from '../../src/model/rule.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb, NODES } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf, namespace, pod, type Raw } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';
import { relativePeerObjects } from '../helpers/relative-peers.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

export function compileAll(cluster: Cluster): {
  state: ClusterState;
  view: CompiledView;
  tables: Map<string, PodTables>;
} {
  const state = new ClusterState();
  state.resync(cluster);
  const configurator = new Configurator(state);
  const tables = new Map<string, PodTables>();
  for (const pod of state.allPods()) tables.set(pod.id, configurator.compile(pod));
  const view: CompiledView = {
    podAt: (ip) =>
      [...state.allPods()].find(
        (p) => !p.hostNetwork && p.ips.some((a) => a.family === ip.family && a.value === ip.value),
      ),
    tables: (id) => tables.get(id),
    nodeAddresses: (node) => cluster.nodes.get(node)?.addresses ?? [],
    groups: stateGroupLookup(state),
  };
  return { state, view, tables };
}

/**
 * Datapaths share what has one id (nftables names its chains by it): every tiered table and
 * every table given one id must hold the same rules, whichever pod and direction it was made for.
 */
function assertIdsNameContent(tables: ReadonlyMap<string, PodTables>): void {
  const seen = new Map<string, string>();
  const check = (id: string, content: string, where: string): void => {
    const known = seen.get(id);
    if (known === undefined) seen.set(id, content);
    else assert.equal(content, known, `${where}: id ${id} names two different lists`);
  };
  for (const [pod, side] of tables)
    for (const direction of ['ingress', 'egress'] as const) {
      const table = side[direction];
      if (table) check(`table:${table.id}`, table.rules.map(ruleText).join('\n'), `${pod} ${direction}`);
      const tiers = side[direction === 'ingress' ? 'ingressTiers' : 'egressTiers'];
      if (tiers)
        check(
          `tiers:${tiers.id}`,
          JSON.stringify([
            tiers.admin.map(ruleText),
            tiers.baseline.map(ruleText),
            tiers.adminBreaks ?? [],
            tiers.baselineBreaks ?? [],
            tiers.inlinesNetworkPolicy ?? false,
          ]),
          `${pod} ${direction}`,
        );
    }
}

export function assertAgrees(cluster: Cluster, view: CompiledView): void {
  assertAgreesWithReference(cluster, (packet) => compiledAllows(view, packet));
}

describe('compiled tables ≡ reference evaluator', () => {
  it('on random clusters with tiered cluster policies (Admin, Baseline, Pass, Deny, named ports, nodes, networks)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 8, maxPolicies: 4, maxClusterPolicies: 4 }), (objects) => {
        const cluster = clusterOf(objects);
        assertAgrees(cluster, compileAll(cluster).view);
      }),
      { numRuns: RUNS },
    );
  });

  it("on random clusters with Calico's tiers and policies and Cilium's (passes, tier ends, deny wins, entities, CIDR rules, NetworkPolicy among them)", () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 3, maxClusterPolicies: 2 }),
        calicoArb(4),
        ciliumArb(3),
        (objects, calico, cilium) => {
          const cluster = clusterOf([...objects, ...calico, ...cilium]);
          const { view, tables } = compileAll(cluster);
          assertAgrees(cluster, view);
          assertIdsNameContent(tables);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("on random clusters whose Calico and Cilium policies only allow, in NetworkPolicy's tier (compiled as tables, not ordered lists)", () => {
    // Such a side's ordered list would be permits closed by a deny: the configurator merges them
    // into the NetworkPolicy-style table instead (configurator.ts permitTable), a Cilium block
    // outside the cluster into an Admin list of permits before it. Counted, so that the property
    // is known to reach both and not only the ordered lists.
    let tableSides = 0;
    let outsideSides = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 3, maxClusterPolicies: 0 }),
        calicoArb(3, { allowOnly: true }),
        ciliumArb(3, { allowOnly: true }),
        fc.boolean(),
        (objects, calico, cilium, withNodes) => {
          // With the nodes or without: own-node traffic and Cilium's host and remote-node peers.
          const cluster = clusterOf([...objects, ...(withNodes ? NODES : []), ...calico, ...cilium]);
          const { state, view, tables } = compileAll(cluster);
          assertAgrees(cluster, view);
          assertIdsNameContent(tables);
          for (const pod of state.allPods())
            for (const direction of ['ingress', 'egress'] as const) {
              const selected = state
                .planSelection(pod, direction)
                .selections.some((s) => s.policies.length > 0);
              const side = tables.get(pod.id);
              const tiers = side?.[direction === 'ingress' ? 'ingressTiers' : 'egressTiers'];
              if (selected && side?.[direction] && !tiers) tableSides++;
              const outside = (rule: Rule): boolean =>
                rule.src.kind === 'outside' || rule.dst.kind === 'outside';
              if (
                selected &&
                side?.[direction] &&
                tiers &&
                !tiers.inlinesNetworkPolicy &&
                tiers.admin.length > 0 &&
                tiers.admin.every((rule) => rule.action === 'permit' && outside(rule))
              )
                outsideSides++;
            }
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(tableSides > 0, 'no side was compiled as a table');
    assert.ok(outsideSides > 0, 'no side was compiled as a table with its outside blocks before it');
  });

  it("keeps its permit tables bounded while a node's versions churn (the memo is dropped at its limit)", () => {
    // A Cilium policy with a remote-node peer: every node version is a new variant of the side's
    // permit table. The bound was checked only where a NetworkPolicy table missed its memo, so
    // with no NetworkPolicy this memo grew with every node change.
    const node = (name: string, version: number): Raw => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { version: String(version) } },
      status: {
        addresses: [{ type: 'InternalIP', address: name === 'n1' ? '192.168.100.1' : '192.168.100.2' }],
      },
    });
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'p', { app: 'api' }, { ips: ['10.0.0.1'], node: 'n1' }),
      node('n1', 0),
      node('n2', 0),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'out', namespace: 'a' },
        spec: {
          endpointSelector: {},
          egress: [{ toEntities: ['remote-node'] }, { toEndpoints: [{ matchLabels: { app: 'db' } }] }],
        },
      },
    ]);
    const state = new ClusterState();
    state.resync(cluster);
    const limit = 50;
    const configurator = new Configurator(state, { memoLimit: limit });
    const p = state.pod('a/p');
    assert.ok(p);
    for (let version = 1; version <= 300; version++) {
      const changed = clusterOf([node('n2', version)]).nodes.get('n2');
      assert.ok(changed);
      state.upsertNode(changed);
      assert.ok(configurator.compile(p).egress, 'the side is a table');
      const size = (configurator as unknown as { memoSize: number }).memoSize;
      assert.ok(size <= limit + 4, `memo of ${size} entries past its limit of ${limit}`);
    }
  });

  it('with v0.1.1 relative peers (sameLabels, notSameLabels), resolved per subject namespace', () => {
    const objects = relativePeerObjects();
    const cluster = clusterOf(objects);
    assertAgrees(cluster, compileAll(cluster).view);
  });

  it('on random clusters (IPv4 and IPv6, named ports, ipBlocks with except, host network)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 8, maxPolicies: 5 }), (objects) => {
        const cluster = clusterOf(objects);
        assertAgrees(cluster, compileAll(cluster).view);
      }),
      { numRuns: RUNS },
    );
  });

  it("names a pod's two sides apart when their lists differ (a pod without ports, a Calico tier both ways)", () => {
    // Found by review: the ingress side's variant (its ports: none) read as the egress side's (no
    // dependency), so both lists had one id and nftables enforced one side with the other's rules.
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'p', { app: 'p' }, { ips: ['10.0.0.1'], node: 'n1' }),
      { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'sec' }, spec: { order: 100 } },
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkPolicy',
        metadata: { name: 'sec.c', namespace: 'a' },
        spec: {
          tier: 'sec',
          selector: 'all()',
          types: ['Ingress', 'Egress'],
          ingress: [
            { action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } },
            { action: 'Deny', source: { nets: ['10.9.0.0/16'] } },
          ],
          egress: [{ action: 'Deny', destination: { nets: ['10.9.0.0/16'] } }],
        },
      },
    ]);
    const { tables } = compileAll(cluster);
    const side = tables.get('a/p');
    assert.ok(side?.ingressTiers && side.egressTiers, 'both sides have lists');
    assert.notEqual(side.ingressTiers.id, side.egressTiers.id);
    assertIdsNameContent(tables);
  });

  it('gives pods with equal policies the same table object', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 8 }), (objects) => {
        const { tables } = compileAll(clusterOf(objects));
        const byId = new Map<string, unknown>();
        for (const t of tables.values()) {
          for (const table of [t.ingress, t.egress]) {
            if (!table) continue;
            const seen = byId.get(table.id);
            if (seen) assert.equal(seen, table, 'equal ids must be the same shared table');
            byId.set(table.id, table);
          }
        }
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  });
});
