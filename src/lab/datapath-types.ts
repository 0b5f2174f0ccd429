/**
 * What the lab asks of a datapath (datapath.ts chooses one; ebpf-datapath.ts is the eBPF one):
 * its kinds, what it is told of the lab, and what it does for the lab's commands.
 */
import type { Renderer } from '../renderers/types.ts';
import type { ClusterState } from '../state/index.ts';
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
