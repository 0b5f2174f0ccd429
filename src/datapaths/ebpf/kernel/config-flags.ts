/**
 * The program's configuration word (`config`, bpf/palisade.h's CFG_*), read and changed one flag
 * at a time over a node's maps: what tests and benchmarks turn on and off beside what the
 * renderer wrote (it writes the whole word when it is made).
 */
import { u32 } from './layout.ts';
import type { BpfMaps } from './types.ts';

/** The configuration word (0 when none is written yet). */
export function configFlags(maps: BpfMaps): number {
  return maps.get('config', u32(0))?.readUInt32LE(0) ?? 0;
}

/** Sets (`on`) or clears one flag of the configuration word, keeping the others. */
export function setConfigFlag(maps: BpfMaps, flag: number, on: boolean): void {
  const flags = configFlags(maps);
  maps.put('config', u32(0), u32(on ? flags | flag : flags & ~flag));
}
