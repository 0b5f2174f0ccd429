/**
 * The eBPF target's public entry: the renderer over a node's BPF maps, the maps as data, their
 * readback from the kernel, and the interpreter that reads them as the program does.
 */
export { EbpfRenderer, type EbpfChanges } from './renderer.ts';
export { EbpfFleetRenderer } from './fleet.ts';
export { ebpfTarget } from './target.ts';
export { ebpfDocument } from './print.ts';
export { NodeView, ebpfVerdicts } from './interpreter.ts';
export { readBack, liveContent, type Readback } from './readback.ts';
export { tableEntries, referenceHash, type TableEntries } from './table-entries.ts';
export { addressOf } from './node-maps.ts';
export { directDeliveryRefusal } from './host-conntrack.ts';
export type { EbpfContent, EbpfOutput } from './output.ts';
export type { RecordModel, AddressedRecord, LiveTable } from './node-maps.ts';
