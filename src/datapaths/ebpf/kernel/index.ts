/**
 * The eBPF layer's public entry: the program's object (compiled on first use), loading, pinning
 * and attaching it with bpftool and tc, the maps' layout, and the pinned maps through libbpf.
 */
export * as layout from './layout.ts';
export type { AddressBytes, EntryValue, MapName, RecordValue, TableHeader } from './layout.ts';
export { asmIncludeDir, compiledObject, requireBpftool } from './toolchain.ts';
export {
  attach,
  attachedDevices,
  deviceFor,
  detach,
  ensureBpffs,
  interfaceNames,
  isLoaded,
  linkOf,
  loadProgram,
  pinDir,
  pinnedInstances,
  pruneLinks,
  unload,
  verifierReason,
  PROGRAMS,
} from './loader.ts';
export { PinnedMaps, PinnedProgram } from './maps.ts';
export { configFlags, setConfigFlag } from './config-flags.ts';
export { pinToCurrentCpu } from './cpu.ts';
export { PreviewMaps } from './preview.ts';
export { ShadowMaps } from './shadow-maps.ts';
export { attachmentProblems, devicesFor, routedDevices } from './attachments.ts';
export { frameOf, TC_ACT_OK, TC_ACT_SHOT, type TestPacket } from './frames.ts';
export { EbpfError, type BpfMaps, type PinLocation } from './types.ts';
