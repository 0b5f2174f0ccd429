/**
 * The lab's public entry.
 */
export { Lab, DEFAULT_STATE_ROOT, requireRoot, type LabOptions, type ApplyReport } from './lab.ts';
export { probeLab, defaultPorts, type ProbePort, type ProbeReport, type ProbeResult } from './probe.ts';
export { planLab, LabError, type LabPlan, type LabPod, type LabNode } from './topology.ts';
export { formatPlan, formatProbeReport, formatApplyReport } from './format.ts';
export type { Transport } from './agent-protocol.ts';
export { DATAPATHS, type DatapathKind } from './datapath.ts';
