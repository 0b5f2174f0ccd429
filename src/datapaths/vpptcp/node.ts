/**
 * VPPTCP on a node: the node's session rules as vpp-agent documents in etcd, kept by the shared
 * document lifecycle (../vpp-documents.ts).
 */
import type { NodeContext, NodeDatapath } from '../types.ts';
import { documentDatapath, sessionDocuments } from '../vpp-documents.ts';
import { vpptcpTarget } from './target.ts';

export function openVpptcpNode(context: NodeContext): NodeDatapath {
  return documentDatapath('vpptcp', context, (keys) => {
    const instance = vpptcpTarget.create(context.state, { node: context.node, options: {} });
    let tables = 0;
    let rules = 0;
    return {
      renderer: instance.renderer,
      documents() {
        const rendering = instance.output();
        tables = rendering.namespaces.length + 1;
        rules = rendering.rules.length;
        return sessionDocuments(rendering, keys.sessions);
      },
      counts: () => ({ tables, rules, sets: 0 }),
    };
  });
}
