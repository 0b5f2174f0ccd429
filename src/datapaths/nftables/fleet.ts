/**
 * Several nodes' nftables renderers behind one renderer, for a controller that enforces a whole
 * (lab) cluster: each pod goes to its node's renderer, group changes go to all, and a commit
 * runs in two phases across nodes — every node restricts before any node relaxes — so that a
 * packet crossing two nodes never meets a mix of old and new policy that permits more than
 * either does.
 */
import type { PodTables } from '../../configurator/index.ts';
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';
import type { NftablesChanges, NftablesRenderer } from './renderer.ts';

export class NodeFleetRenderer implements Renderer<Map<string, NftablesChanges>> {
  readonly reads = 'tables' as const;
  readonly name = 'nftables';
  private readonly podNode = new Map<string, string>();

  constructor(
    readonly nodes: ReadonlyMap<string, NftablesRenderer>,
    private readonly twoPhase = true,
  ) {}

  newTxn(options: { readonly resync: boolean }): RendererTxn<Map<string, NftablesChanges>> {
    const txns = new Map([...this.nodes].map(([node, renderer]) => [node, renderer.newTxn(options)]));
    if (options.resync) this.podNode.clear();
    return {
      render: (pod: RenderedPod, tables: PodTables | undefined) => {
        const previous = this.podNode.get(pod.id);
        const target = pod.node !== undefined && txns.has(pod.node) && tables ? pod.node : undefined;
        if (previous !== undefined && previous !== target)
          txns.get(previous)?.render({ id: pod.id, ips: [] }, undefined);
        if (target !== undefined) {
          txns.get(target)?.render(pod, tables);
          this.podNode.set(pod.id, target);
        } else this.podNode.delete(pod.id);
      },
      groupsChanged: (groups, pods) => {
        for (const txn of txns.values()) txn.groupsChanged?.(groups, pods);
      },
      changes: () => new Map([...txns].map(([node, txn]) => [node, txn.changes()])),
      commit: () => {
        if (this.twoPhase && !options.resync)
          for (const renderer of this.nodes.values()) renderer.commitRestrict();
        for (const txn of txns.values()) txn.commit();
      },
    };
  }
}
