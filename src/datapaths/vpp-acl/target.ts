/**
 * The VPP ACL render target: per node, the renderer cache combined towards ingress, rendered as
 * ligato ACLs; printed as one JSON document for every rendered node. Its interpreter follows a
 * packet as VPP would: towards a pod, the pod's TAP egress ACLs; leaving a node for another, the
 * uplinks' global ACL. Traffic between a pod and its own node is not policed by VPP.
 */
import type { Cluster, Endpoint } from '../../model/types.ts';
import { RendererCache } from '../cache/index.ts';
import { clusterAddresses } from '../cluster-addresses.ts';
import { byNode, printNodeDocuments } from '../node-documents.ts';
import type { Rendered, TargetImplementation, VerdictPacket } from '../types.ts';
import { interfaceAllows, uplinkAllows } from './interpreter.ts';
import { podInterface, type Acl } from './model.ts';
import { renderAcls, type AclRendering } from './render.ts';

export const vppAclTarget: TargetImplementation<AclRendering> = {
  capabilities: { scope: 'node', nodeRequired: false, orderedClusterPolicy: true, policesOwnNode: false },
  formats: ['json'],
  create(store) {
    const cache = RendererCache.forStore(store, 'ingress');
    return { renderer: cache, output: () => renderAcls(cache.snapshot, store) };
  },
  print: (rendered) => printNodeDocuments(rendered),
  interpreter: {
    verdicts: aclVerdicts,
    deniesOnly: (packet) =>
      packet.protocol === 'SCTP'
        ? 'VPP ACL rules cannot match SCTP ports: SCTP that a rule with ports allows is denied'
        : undefined,
  },
};

function aclVerdicts(
  rendered: readonly Rendered<AclRendering>[],
  cluster: Cluster,
): (packet: VerdictPacket) => boolean {
  const nodes = byNode(rendered);
  const { podAt, ownNode } = clusterAddresses(cluster);
  const acls = (pod: Endpoint): readonly Acl[] => nodes.get(pod.node ?? '')?.acls ?? [];
  return (packet) => {
    const src = podAt(packet.src);
    const dst = podAt(packet.dst);
    const towardsDst =
      !dst || ownNode(dst, packet.src) || interfaceAllows(acls(dst), podInterface(dst.id), 'egress', packet);
    if (src && dst && (src.node ?? '') === (dst.node ?? '')) return towardsDst;
    const leavingSrc = !src || ownNode(src, packet.dst) || uplinkAllows(acls(src), packet);
    return leavingSrc && towardsDst;
  };
}
