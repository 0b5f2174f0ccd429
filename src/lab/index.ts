/**
 * The lab's public entry.
 */
export { Lab, DEFAULT_STATE_ROOT, requireRoot, type LabOptions, type ApplyReport } from './lab.ts';
export { probeLab, defaultPorts, type ProbePort, type ProbeReport, type ProbeResult } from './probe.ts';
export { planLab, LabError, type LabPlan, type LabPod } from './topology.ts';
export { formatPlan, formatProbeReport, formatApplyReport } from './format.ts';
export type { Transport } from './agent-protocol.ts';
export { DATAPATHS, type DatapathKind } from './datapath.ts';
// The control plane (etcd, the reflector, agents) loads only for a lab that has one: the CLI
// imports control-plane-lab.ts itself when hasControlPlane() or `up --control-plane` says so.
export { hasControlPlane } from './lab.ts';
export { labFlowSockets } from './lab-files.ts';
export type { ControlPlaneLab } from './control-plane-lab.ts';
export type { Realization } from './control-plane.ts';
export type { ControlPlaneRecord } from './control-plane-record.ts';
/** The lab with a control plane, loaded on first use (it brings etcd's client and the reflector). */
export const loadControlPlaneLab = () => import('./control-plane-lab.ts');
