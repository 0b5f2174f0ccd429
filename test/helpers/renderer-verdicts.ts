/**
 * Render targets' outputs for a whole cluster and their interpreters' verdicts, through the
 * registry — shared by the renderers' differential tests and the renderer conformance suite.
 * Every target is loaded once, when this module is first imported.
 */
import type { Cluster } from '../../src/model/types.ts';
import { renderCluster } from '../../src/pipeline/index.ts';
import { loadTarget, loadTargets, type RenderTarget, type VerdictPacket } from '../../src/datapaths/index.ts';
import type { Acl } from '../../src/datapaths/vpp-acl/index.ts';
import type { SessionRendering } from '../../src/datapaths/vpptcp/index.ts';

export type { VerdictPacket };

/** Every registered target, loaded. */
export const TARGETS: readonly RenderTarget[] = await loadTargets();
const VPP_ACL = await loadTarget('vpp-acl');
const VPPTCP = await loadTarget('vpptcp');

/** The registered targets that interpret their output in-process. */
export const INTERPRETED: readonly RenderTarget[] = TARGETS.filter((t) => t.interpreter);

export function targetNamed(name: string): RenderTarget {
  const target = TARGETS.find((t) => t.name === name);
  if (!target) throw new Error(`no render target ${name}`);
  return target;
}

/** A target's verdicts on a cluster: its output for every node (or the cluster), interpreted. */
export function verdictsFor(name: string, cluster: Cluster): (packet: VerdictPacket) => boolean {
  const target = targetNamed(name);
  if (!target.interpreter) throw new Error(`${name} has no in-process interpreter`);
  return target.interpreter.verdicts(renderCluster(target, cluster), cluster);
}

/** Every node's rendered ACLs. */
export function aclsPerNode(cluster: Cluster): Map<string, Acl[]> {
  return new Map(renderCluster(VPP_ACL, cluster).map(({ node, output }) => [node ?? '', [...output.acls]]));
}

/** Every node's rendered session rules. */
export function sessionRulesPerNode(cluster: Cluster): Map<string, SessionRendering> {
  return new Map(renderCluster(VPPTCP, cluster).map(({ node, output }) => [node ?? '', output]));
}

export const vppAclVerdicts = (cluster: Cluster) => verdictsFor('vpp-acl', cluster);
export const vpptcpVerdicts = (cluster: Cluster) => verdictsFor('vpptcp', cluster);
export const neutronVerdicts = (cluster: Cluster) => verdictsFor('neutron', cluster);
