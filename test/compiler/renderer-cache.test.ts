/**
 * After CombineRules and BuildGlobalTable the verdicts do not change: per node, the combined
 * local tables (policing one side) and the global table (the other side, where traffic crosses
 * the node boundary) give the reference evaluator's answer for every packet, for both the ACL
 * direction (local tables on the pod's ingress) and the VPPTCP direction (on its egress).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { firstMatch, stateGroupLookup } from '../../src/configurator/index.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { RendererCache, type CacheChanges, type Side } from '../../src/datapaths/cache/index.ts';
import { ruleText } from '../../src/model/rule.ts';
import type { Packet } from '../../src/configurator/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf, endpoint, namespace, pod } from '../helpers/builders.ts';
import { assertAgreesWithReference, podAndOwnNode, topology } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

/** One pipeline and cache per node, as one agent per node would run. */
function renderPerNode(
  cluster: Cluster,
  side: Side,
): Map<string, { cache: RendererCache; pipeline: PolicyPipeline }> {
  const nodes = new Set(cluster.endpoints.map((e) => e.node ?? ''));
  const result = new Map<string, { cache: RendererCache; pipeline: PolicyPipeline }>();
  for (const node of nodes) {
    const state = new ClusterState();
    const cache = new RendererCache({ side, groups: stateGroupLookup(state) });
    const pipeline = new PolicyPipeline({ state, node, renderers: [cache] });
    pipeline.apply({ type: 'resync', cluster });
    result.set(node, { cache, pipeline });
  }
  return result;
}

function combinedAllows(
  cluster: Cluster,
  side: Side,
  caches: ReturnType<typeof renderPerNode>,
  packet: Packet,
): boolean {
  const { podAt, ownNode } = topology(cluster);
  const src = podAt(packet.src);
  const dst = podAt(packet.dst);
  const groupsOf = (pod: Endpoint) =>
    stateGroupLookup((caches.get(pod.node ?? '') as { pipeline: PolicyPipeline }).pipeline.state);
  const local = (pod: Endpoint): boolean => {
    const table = caches.get(pod.node ?? '')?.cache.localTable(pod.id);
    return !table || firstMatch(table.rules, packet, groupsOf(pod)) === 'permit';
  };
  const global = (pod: Endpoint): boolean => {
    const entry = caches.get(pod.node ?? '');
    return !entry || firstMatch(entry.cache.snapshot.global.rules, packet, groupsOf(pod)) === 'permit';
  };
  // Node-local traffic is let through before any table, as the datapaths do.
  const srcChecked = src && !ownNode(src, packet.dst);
  const dstChecked = dst && !ownNode(dst, packet.src);
  if (src && dst && (src.node ?? '') === (dst.node ?? '')) {
    // Same node: only the combined local table of the policed side is traversed.
    if (side === 'ingress') return !dstChecked || local(dst);
    return !srcChecked || local(src);
  }
  if (side === 'ingress') return (!srcChecked || global(src)) && (!dstChecked || local(dst));
  return (!srcChecked || local(src)) && (!dstChecked || global(dst));
}

describe('combined and global tables ≡ reference evaluator', () => {
  const agree = (side: Side, options: Parameters<typeof clusterArb>[0], engines = false) =>
    fc.assert(
      fc.property(
        clusterArb(options),
        calicoArb(engines ? 3 : 0),
        ciliumArb(engines ? 2 : 0),
        (objects, calico, cilium) => {
          const cluster = clusterOf([...objects, ...calico, ...cilium]);
          const caches = renderPerNode(cluster, side);
          // VPP does not police pod ↔ own-node traffic, which cluster policy may deny.
          assertAgreesWithReference(
            cluster,
            (packet) => combinedAllows(cluster, side, caches, packet),
            `${side}: `,
            podAndOwnNode(cluster),
          );
        },
      ),
      { numRuns: RUNS },
    );
  for (const side of ['ingress', 'egress'] as const) {
    it(`local tables on the pod's ${side} side (${side === 'ingress' ? 'ACL' : 'VPPTCP'}), several nodes`, () =>
      agree(side, { maxPods: 7, maxPolicies: 4 }));
    it(`with ordered cluster policy flattened into the ${side} side (Admin, Pass, Baseline)`, () =>
      agree(side, { maxPods: 6, maxPolicies: 3, maxClusterPolicies: 3 }));
    it(`with Calico's tiers and Cilium's policies flattened into the ${side} side (pass to a later tier, world)`, () =>
      agree(side, { maxPods: 6, maxPolicies: 2, maxClusterPolicies: 1 }, true));
  }
});

describe('flattened tiers follow group membership', () => {
  it('a pod joining a group that only an Admin rule names changes the flattened table of the pods it selects', () => {
    const anp = {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'block-bad' },
      spec: {
        priority: 10,
        subject: { namespaces: {} },
        ingress: [
          {
            action: 'Deny',
            from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'bad' } } } }],
          },
        ],
      },
    };
    const web = pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' });
    const bad = pod('a', 'bad', { app: 'bad' }, { ips: ['10.0.0.9'], node: 'n2' });
    const before = clusterOf([namespace('a'), web, anp]);
    const after = clusterOf([namespace('a'), web, bad, anp]);
    const state = new ClusterState();
    const cache = new RendererCache({ side: 'ingress', groups: stateGroupLookup(state) });
    const pipeline = new PolicyPipeline({ state, node: 'n1', renderers: [cache] });
    pipeline.apply({ type: 'resync', cluster: before });
    const table = () => (cache.localTable('a/web')?.rules ?? []).map(ruleText);
    assert.ok(!table().some((rule) => rule.includes('10.0.0.9/32')));
    const result = pipeline.apply({ type: 'upsert-pod', pod: endpoint(after, 'a/bad') });
    assert.ok(table().includes('deny ANY 10.0.0.9/32 -> any port any'), table().join('\n'));
    const changes = result.changes.get('cache') as CacheChanges;
    assert.deepEqual(
      changes.rebound.map((r) => r.pod),
      ['a/web'],
      'the pod on this node whose flattened table expanded the group is rebound',
    );
  });
});
