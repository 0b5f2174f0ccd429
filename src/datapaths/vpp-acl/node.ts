/**
 * VPP ACL on a node: the node's ACLs as ligato vpp-agent documents in etcd, kept by the shared
 * document lifecycle (../vpp-documents.ts).
 */
import type { NodeContext, NodeDatapath } from '../types.ts';
import { aclDocuments, documentDatapath } from '../vpp-documents.ts';
import { vppAclTarget } from './target.ts';

export function openVppAclNode(context: NodeContext): NodeDatapath {
  return documentDatapath('vpp-acl', context, (keys) => {
    const instance = vppAclTarget.create(context.state, { node: context.node, options: {} });
    let rules = 0;
    let acls = 0;
    return {
      renderer: instance.renderer,
      documents() {
        const rendering = instance.output();
        acls = rendering.acls.length;
        rules = rendering.acls.reduce((total, acl) => total + acl.rules.length, 0);
        return aclDocuments(rendering, keys.acl);
      },
      counts: () => ({ tables: acls, rules, sets: 0 }),
    };
  });
}
