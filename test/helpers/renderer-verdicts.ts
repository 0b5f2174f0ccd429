/**
 * Each renderer's output, interpreted the way its target matches packets, as one verdict
 * function per cluster — shared by the renderers' differential tests and the renderer
 * conformance suite. Traffic between a pod and its own node bypasses policy in every datapath,
 * as in the reference evaluator's default.
 */
import { stateGroupLookup } from '../../src/configurator/index.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import type { Cluster, Endpoint, Protocol } from '../../src/model/types.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { RendererCache } from '../../src/renderers/cache/index.ts';
import {
  interfaceAllows,
  podInterface,
  renderAcls,
  uplinkAllows,
  type Acl,
} from '../../src/renderers/vpp-acl/index.ts';
import {
  globalAllows,
  localAllows,
  renderSessionRules,
  type SessionRendering,
} from '../../src/renderers/vpptcp/index.ts';
import { NeutronModel, renderNeutron } from '../../src/renderers/neutron/index.ts';
import { topology } from './compiled.ts';

export interface VerdictPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

export type RendererName = 'vpp-acl' | 'vpptcp' | 'neutron';
export const RENDERERS: readonly RendererName[] = ['vpp-acl', 'vpptcp', 'neutron'];

function nodesOf(cluster: Cluster): string[] {
  return [...new Set(cluster.endpoints.map((e) => e.node ?? ''))];
}

function cacheFor(
  cluster: Cluster,
  node: string,
  side: 'ingress' | 'egress',
): { cache: RendererCache; state: ClusterState } {
  const state = new ClusterState();
  const cache = new RendererCache({ side, groups: stateGroupLookup(state) });
  new PolicyPipeline({ state, node, renderers: [cache] }).apply({ type: 'resync', cluster });
  return { cache, state };
}

/** Every node's rendered ACLs. */
export function aclsPerNode(cluster: Cluster): Map<string, Acl[]> {
  return new Map(
    nodesOf(cluster).map((node) => {
      const { cache, state } = cacheFor(cluster, node, 'ingress');
      return [node, [...renderAcls(cache.snapshot, state).acls]];
    }),
  );
}

/** Every node's rendered session rules. */
export function sessionRulesPerNode(cluster: Cluster): Map<string, SessionRendering> {
  return new Map(
    nodesOf(cluster).map((node) => {
      const { cache, state } = cacheFor(cluster, node, 'egress');
      return [node, renderSessionRules(cache.snapshot, state)];
    }),
  );
}

/** VPP ACL: towards a pod, its TAP's egress ACLs; leaving a node, the uplinks' global ACL. */
export function vppAclVerdicts(cluster: Cluster): (packet: VerdictPacket) => boolean {
  const nodes = aclsPerNode(cluster);
  const { podAt, ownNode } = topology(cluster);
  return (packet) => {
    const src = podAt(packet.src);
    const dst = podAt(packet.dst);
    const acls = (pod: Endpoint): readonly Acl[] => nodes.get(pod.node ?? '') ?? [];
    const towardsDst =
      !dst || ownNode(dst, packet.src) || interfaceAllows(acls(dst), podInterface(dst.id), 'egress', packet);
    if (src && dst && (src.node ?? '') === (dst.node ?? '')) return towardsDst;
    const leavingSrc = !src || ownNode(src, packet.dst) || uplinkAllows(acls(src), packet);
    return leavingSrc && towardsDst;
  };
}

/** VPPTCP: the source namespace's local table; the receiving node's global table unless same node. */
export function vpptcpVerdicts(cluster: Cluster): (packet: VerdictPacket) => boolean {
  const nodes = sessionRulesPerNode(cluster);
  const { podAt, ownNode } = topology(cluster);
  return (packet) => {
    if (packet.protocol === 'SCTP') throw new Error('VPPTCP does not police SCTP');
    const session = { ...packet, protocol: packet.protocol };
    const src = podAt(packet.src);
    const dst = podAt(packet.dst);
    const outgoing = (p: Endpoint): boolean => {
      const rendering = nodes.get(p.node ?? '');
      const appns = rendering?.namespaces.find((n) => n.pod === p.id)?.appns_index;
      return !rendering || appns === undefined || localAllows(rendering.rules, appns, session);
    };
    const incoming = (p: Endpoint): boolean => {
      const rendering = nodes.get(p.node ?? '');
      return !rendering || globalAllows(rendering.rules, session);
    };
    const srcChecked = src && !ownNode(src, packet.dst);
    const dstChecked = dst && !ownNode(dst, packet.src);
    if (src && dst && (src.node ?? '') === (dst.node ?? '')) return !srcChecked || outgoing(src);
    return (!srcChecked || outgoing(src)) && (!dstChecked || incoming(dst));
  };
}

/** Neutron: the sender port's egress rules and the receiver port's ingress rules. */
export function neutronVerdicts(cluster: Cluster): (packet: VerdictPacket) => boolean {
  const state = new ClusterState();
  state.resync(cluster);
  const model = new NeutronModel(renderNeutron(state));
  const { podAt, ownNode } = topology(cluster);
  return (packet) => {
    const srcPod = podAt(packet.src);
    const dstPod = podAt(packet.dst);
    const src = model.portAt(packet.src);
    const dst = model.portAt(packet.dst);
    const egress =
      !src || (srcPod && ownNode(srcPod, packet.dst)) || model.allows(src, 'egress', packet.dst, packet);
    const ingress =
      !dst || (dstPod && ownNode(dstPod, packet.src)) || model.allows(dst, 'ingress', packet.src, packet);
    return Boolean(egress) && Boolean(ingress);
  };
}

export function verdictsFor(renderer: RendererName, cluster: Cluster): (packet: VerdictPacket) => boolean {
  switch (renderer) {
    case 'vpp-acl':
      return vppAclVerdicts(cluster);
    case 'vpptcp':
      return vpptcpVerdicts(cluster);
    case 'neutron':
      return neutronVerdicts(cluster);
  }
}
