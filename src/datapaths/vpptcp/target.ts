/**
 * The VPPTCP render target: per node, the renderer cache combined towards egress, rendered as
 * VPP session rules; printed as one JSON document for every rendered node. Its interpreter
 * follows a connection as the session layer would: the source pod's application-namespace
 * (local) table, and the receiving node's global table unless both pods share a node. The
 * session layer handles TCP and UDP only, and traffic between a pod and its own node is not
 * policed by VPP.
 */
import type { Cluster, Endpoint } from '../../model/types.ts';
import { RendererCache } from '../cache/index.ts';
import { clusterAddresses } from '../cluster-addresses.ts';
import { byNode, printNodeDocuments } from '../node-documents.ts';
import type { Rendered, TargetImplementation, VerdictPacket } from '../types.ts';
import { globalAllows, localAllows } from './interpreter.ts';
import { renderSessionRules, type SessionRendering } from './render.ts';

export const vpptcpTarget: TargetImplementation<SessionRendering> = {
  capabilities: { scope: 'node', nodeRequired: false, orderedClusterPolicy: true, policesOwnNode: false },
  formats: ['json'],
  create(store) {
    const cache = RendererCache.forStore(store, 'egress');
    return { renderer: cache, output: () => renderSessionRules(cache.snapshot, store) };
  },
  print: (rendered) => printNodeDocuments(rendered),
  interpreter: {
    verdicts: sessionVerdicts,
    unpoliced: (packet) =>
      packet.protocol === 'SCTP' ? 'the VPP session layer does not handle SCTP' : undefined,
  },
};

function sessionVerdicts(
  rendered: readonly Rendered<SessionRendering>[],
  cluster: Cluster,
): (packet: VerdictPacket) => boolean {
  const nodes = byNode(rendered);
  const { podAt, ownNode } = clusterAddresses(cluster);
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
