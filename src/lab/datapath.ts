/**
 * The lab's datapath, chosen at `lab up --datapath` and recorded in the lab's state: nftables (the
 * default: one table per node namespace) or eBPF (the TC programs on each pod's host-side veth,
 * maps pinned per node). Either is one renderer for the lab's pipeline — a fleet of per-node
 * renderers committing in two phases across nodes — plus what the lab asks of the kernel beyond
 * rendering: reading it back on attach, checking it before an apply, and cleaning up at `down`.
 *
 * The eBPF side is imported only when a lab uses it (no BPF code loads for nftables labs).
 */
import { NftablesRenderer, NodeFleetRenderer } from '../renderers/nftables/index.ts';
import { nftRunner, type NftRunner } from '../dataplane/index.ts';
import type { DatapathKind, DatapathModule } from './datapath-types.ts';

export { DATAPATHS, type DatapathKind, type DatapathModule, type LabDatapath } from './datapath-types.ts';

/** The exec runner's deadline per nft process (`PALISADE_NFT_TIMEOUT_MS`, default 30 s). */
function nftTimeout(): number {
  const value = Number(process.env.PALISADE_NFT_TIMEOUT_MS);
  return Number.isFinite(value) && value > 0 ? value : 30_000;
}

const nftablesModule: DatapathModule = {
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

/** The datapath's module (the eBPF one imported on first use). */
export async function datapathModule(kind: DatapathKind): Promise<DatapathModule> {
  if (kind === 'nftables') return nftablesModule;
  return (await import('./ebpf-datapath.ts')).ebpfModule;
}
