/**
 * nftables on a fleet of nodes driven by one process (the lab): one table per node namespace, each
 * node's renderer planning against what its kernel holds, the fleet committing in two phases
 * across nodes (fleet.ts). What a node holds is what the node lifecycle (node.ts) would hold.
 */
import { nftRunner, type NftRunner } from '../../dataplane/index.ts';
import type { FleetBackend } from '../types.ts';
import { NodeFleetRenderer } from './fleet.ts';
import { NftablesRenderer } from './renderer.ts';

/** The exec runner's deadline per nft process (`PALISADE_NFT_TIMEOUT_MS`, default 30 s). */
function nftTimeout(): number {
  const value = Number(process.env.PALISADE_NFT_TIMEOUT_MS);
  return Number.isFinite(value) && value > 0 ? value : 30_000;
}

export const nftablesFleet: FleetBackend = {
  open({ plan, store, allowNodeLocal, killDenied, families }) {
    const renderers = new Map<string, NftablesRenderer>();
    const runners: NftRunner[] = [];
    try {
      for (const node of plan.nodes) {
        const runner = nftRunner({ netns: node.netns, timeoutMs: nftTimeout() });
        runners.push(runner);
        renderers.set(
          node.name,
          new NftablesRenderer({
            state: store,
            runner,
            allowNodeLocal,
            recheckFlows: killDenied,
            families: [...families],
          }),
        );
      }
    } catch (error) {
      for (const runner of runners) runner.close();
      throw error;
    }
    return {
      kind: 'nftables',
      renderer: new NodeFleetRenderer(renderers),
      resyncsAfterAttach: false,
      pause: () => {
        for (const renderer of renderers.values()) renderer.pause();
      },
      attach: () =>
        [...renderers].flatMap(([node, renderer]) => {
          const pending = renderer.attach();
          return pending === 0 ? [] : [{ node, pending }];
        }),
      verify: () => {
        for (const renderer of renderers.values()) renderer.verify();
        return false;
      },
      unchecked: () => [...renderers].filter(([, r]) => !r.verify()).map(([n]) => n),
      operations: (changes) =>
        new Map(
          [...((changes as Map<string, { operations: number; full: boolean }> | undefined) ?? [])].map(
            ([n, c]) => [n, c.full ? ('whole table' as const) : c.operations],
          ),
        ),
      close: () => {
        for (const runner of runners) runner.close();
      },
    };
  },
  remove: () => [],
};
