/**
 * The lab's datapath, chosen at `lab up --datapath` and recorded in the lab's state: nftables (the
 * default: one table per node namespace) or eBPF (the TC programs on each pod's host-side veth,
 * maps pinned per node). Either is one renderer for the lab's pipeline — a fleet of per-node
 * renderers committing in two phases across nodes — plus what the lab asks of the kernel beyond
 * rendering: reading it back on attach, checking it before an apply, and cleaning up at `down`.
 *
 * The eBPF side is imported only when a lab uses it (no BPF code loads for nftables labs).
 */
import type { Renderer } from '../renderers/types.ts';
import { NftablesRenderer, NodeFleetRenderer } from '../renderers/nftables/index.ts';
import type { ClusterState } from '../state/index.ts';
import { nftRunner, type NftRunner } from '../dataplane/index.ts';
import type { LabPlan } from './topology.ts';

export const DATAPATHS = ['nftables', 'ebpf'] as const;
export type DatapathKind = (typeof DATAPATHS)[number];

/** What a datapath needs to know of the lab. */
export interface DatapathContext {
  readonly plan: LabPlan;
  readonly store: ClusterState;
  readonly allowNodeLocal: boolean;
  readonly killDenied: boolean;
  readonly families: readonly (4 | 6)[];
}

/** One lab's datapath on all its nodes. */
export interface LabDatapath {
  readonly kind: DatapathKind;
  /** The pipeline's renderer (all nodes). */
  readonly renderer: Renderer;
  /**
   * How attach() leaves the kernel: false — the next commit sends the difference between what
   * the kernel holds and the policy (nftables); true — verify() asks for the resync that does
   * (eBPF, whose renderers only previewed while paused).
   */
  readonly resyncsAfterAttach: boolean;
  /** Before the first resync of a re-opened lab: build what is desired without committing. */
  pause(): void;
  /** After it: nodes whose kernel state differed from the lab's policy, and by how much. */
  attach(): { readonly node: string; readonly pending: number | 'replace' }[];
  /**
   * Before an apply: checks each node's kernel state is what this process last committed and
   * catches up where another process changed it. True when the pipeline must be resynced
   * (always, for eBPF, after attach()).
   */
  verify(): boolean;
  /** After a rollback: nodes whose kernel state is not what was last committed. */
  unchecked(): string[];
  /** Operations per node of the pipeline result's changes ('whole table' when replaced whole). */
  operations(changes: unknown): Map<string, number | 'whole table'>;
  close(): void;
}

export interface DatapathModule {
  open(context: DatapathContext): LabDatapath;
  /** Removes what the datapath left outside the lab's namespaces (pins); returns what failed. */
  remove(plan: LabPlan): string[];
}

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
