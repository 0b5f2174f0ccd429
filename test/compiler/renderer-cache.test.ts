/**
 * After CombineRules and BuildGlobalTable the verdicts do not change: per node, the combined
 * local tables (policing one side) and the global table (the other side, where traffic crosses
 * the node boundary) give the reference evaluator's answer for every packet, for both the ACL
 * direction (local tables on the pod's ingress) and the VPPTCP direction (on its egress).
 */
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { firstMatch, stateGroupLookup } from '../../src/configurator/index.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { RendererCache, type Side } from '../../src/renderers/cache/index.ts';
import type { Packet } from '../../src/configurator/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';

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
  const same = (a: IpAddress, b: IpAddress): boolean => a.family === b.family && a.value === b.value;
  const podAt = (ip: IpAddress): Endpoint | undefined =>
    cluster.endpoints.find((e) => !e.hostNetwork && e.ips.some((a) => same(a, ip)));
  const ownNode = (pod: Endpoint, ip: IpAddress): boolean =>
    !!pod.node && (cluster.nodes.get(pod.node)?.addresses.some((a) => same(a, ip)) ?? false);
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
  for (const side of ['ingress', 'egress'] as const) {
    it(`local tables on the pod's ${side} side (${side === 'ingress' ? 'ACL' : 'VPPTCP'}), several nodes`, () => {
      fc.assert(
        fc.property(clusterArb({ maxPods: 7, maxPolicies: 4 }), (objects) => {
          const cluster = clusterOf(objects);
          const caches = renderPerNode(cluster, side);
          assertAgreesWithReference(
            cluster,
            (packet) => combinedAllows(cluster, side, caches, packet),
            `${side}: `,
          );
        }),
        { numRuns: RUNS },
      );
    });
  }
});
