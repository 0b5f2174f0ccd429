/**
 * What an eBPF instance realized: one node's maps as data (tables in use, address records, group
 * ids), whether they were applied to the kernel and where they are pinned.
 */
import type { AddressedRecord, LiveTable } from './node-maps.ts';

export interface EbpfContent {
  readonly epoch: number;
  readonly tables: readonly LiveTable[];
  readonly records: readonly AddressedRecord[];
  /** Group references by id. */
  readonly groups: ReadonlyMap<number, string>;
  /** Group ids by reference hash (tables' group entries name groups by hash). */
  readonly groupIds: ReadonlyMap<string, number>;
}

export interface EbpfOutput {
  readonly node: string | undefined;
  readonly content: EbpfContent;
  readonly allowNodeLocal: boolean;
  /** The per-node pin directory when applied to the kernel. */
  readonly pinned: string | undefined;
  /** Whether packets between two pods of the node may be delivered directly (bpf/palisade.h, struct peer). */
  readonly directDelivery: boolean;
  /** What the user should know about how it was applied (printed on stderr). */
  readonly warnings: readonly string[];
  /** Map operations written (or recorded) so far, and by the last commit before its switch. */
  readonly operations: number;
}
