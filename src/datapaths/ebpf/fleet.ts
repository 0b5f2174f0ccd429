/**
 * Several nodes' eBPF renderers behind one renderer, for a controller that enforces a whole (lab)
 * cluster. Every node's renderer sees every pod (each renders its own node's pods and keeps the
 * others as group members); a commit runs in two phases across nodes, as the nftables fleet's
 * does: every node makes live what both the previous and the new policy allow before any node
 * makes the new policy live, so a packet judged on two nodes never meets a mix that permits more
 * than either policy does.
 */
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';
import type { EbpfChanges, EbpfRenderer } from './renderer.ts';

interface EbpfFleetOptions {
  /** Two phases across nodes (default true); one commit per node otherwise. */
  readonly twoPhase?: boolean;
  /** Called when every node has made its first phase live (tests look at the kernel then). */
  readonly betweenPhases?: () => void;
}

export class EbpfFleetRenderer implements Renderer<Map<string, EbpfChanges>> {
  readonly name = 'ebpf';
  readonly reads = 'store' as const;

  constructor(
    readonly nodes: ReadonlyMap<string, EbpfRenderer>,
    private readonly options: EbpfFleetOptions = {},
  ) {}

  newTxn(options: { readonly resync: boolean }): RendererTxn<Map<string, EbpfChanges>> {
    const txns = new Map([...this.nodes].map(([node, renderer]) => [node, renderer.newTxn(options)]));
    return {
      render: (pod: RenderedPod) => {
        for (const txn of txns.values()) txn.render(pod, undefined);
      },
      groupsChanged: (groups, pods) => {
        for (const txn of txns.values()) txn.groupsChanged?.(groups, pods);
      },
      changes: () => new Map([...txns].map(([node, txn]) => [node, txn.changes()])),
      commit: () => {
        if ((this.options.twoPhase ?? true) && !options.resync) {
          for (const txn of txns.values()) txn.restrict();
          this.options.betweenPhases?.();
        }
        for (const txn of txns.values()) txn.commit();
      },
    };
  }
}
