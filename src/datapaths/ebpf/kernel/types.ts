/**
 * The eBPF layer's contracts: where a node's program and maps are pinned, and the one error type
 * its operations throw — a one-line message naming what is missing or what the kernel refused.
 */
import { DataplaneError } from '../../../dataplane/index.ts';
import type { MapName } from './layout.ts';

/**
 * A tool, library or kernel feature the eBPF datapath needs is missing, or the kernel refused
 * (a DataplaneError: the CLI prints its one line and exits 1).
 */
export class EbpfError extends DataplaneError {}

/** Where one node's program and maps are pinned: `<root>/<instance>/{progs,maps}`. */
export interface PinLocation {
  /** The per-node directory name (`netns-<node's namespace>`, for render --apply and the lab alike). */
  readonly instance: string;
  /** The bpffs directory pins live under (default /sys/fs/bpf/palisade). */
  readonly root?: string;
}

/**
 * A node's maps as the renderer uses them: the pinned maps (maps.ts), or an in-memory stand-in in
 * tests. Keys and values are the encoded bytes of layout.ts.
 */
export interface BpfMaps {
  put(map: MapName, key: Buffer, value: Buffer): void;
  remove(map: MapName, key: Buffer): void;
  get(map: MapName, key: Buffer): Buffer | undefined;
  entries(map: MapName): [Buffer, Buffer][];
  /** Waits out an RCU grace period (absent: nothing reads the maps concurrently). */
  graceSync?(): void;
  graceAsync?(done: (error: Error | undefined) => void): void;
}
