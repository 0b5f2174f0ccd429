/**
 * The lab's datapath, chosen at `lab up --datapath` and recorded in the lab's state: a backend of
 * the datapaths registry that runs as a fleet (nftables, the default: one table per node
 * namespace; eBPF: the TC programs on each pod's host-side veth, maps pinned per node). Its code
 * is loaded only when a lab uses it (no BPF code loads for nftables labs).
 */
import { FLEET_NAMES, loadFleet, type FleetName } from '../datapaths/index.ts';
import type { FleetBackend } from '../datapaths/types.ts';

export const DATAPATHS = FLEET_NAMES;
export type DatapathKind = FleetName;

/** The datapath's fleet, its code loaded. */
export function datapathModule(kind: DatapathKind): Promise<FleetBackend> {
  return loadFleet(kind);
}
