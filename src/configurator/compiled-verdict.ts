/**
 * A whole-cluster verdict from compiled tables, for one packet: the source pod's egress side and
 * the destination pod's ingress side must both permit it. Per side: the Admin tier's first match
 * (permit or deny decides), then the NetworkPolicy table when the pod is isolated (node-local
 * traffic allowed, optionally), else the Baseline tier's first match, else permit.
 */
import type { IpAddress } from '../net/ip.ts';
import type { Endpoint } from '../model/types.ts';
import { firstMatch, tieredMatch, type GroupLookup, type Packet } from './table-evaluator.ts';
import type { PodTables } from './types.ts';

export interface CompiledView {
  /** The non-host-network pod that owns an address. */
  podAt(ip: IpAddress): Endpoint | undefined;
  tables(pod: string): PodTables | undefined;
  nodeAddresses(node: string): readonly IpAddress[];
  readonly groups: GroupLookup;
}

export function compiledAllows(view: CompiledView, packet: Packet, allowNodeLocal = true): boolean {
  const side = (pod: Endpoint | undefined, direction: 'ingress' | 'egress', other: IpAddress): boolean => {
    if (!pod) return true;
    const tables = view.tables(pod.id);
    const tiers = direction === 'ingress' ? tables?.ingressTiers : tables?.egressTiers;
    const admin = tiers && tieredMatch(tiers.admin, tiers.adminBreaks, packet, view.groups);
    if (admin === 'permit' || admin === 'deny') return admin === 'permit';
    const table = tables?.[direction];
    if (table) {
      // NetworkPolicy always lets an isolated pod talk with its own node.
      const local =
        allowNodeLocal &&
        pod.node !== undefined &&
        view.nodeAddresses(pod.node).some((a) => a.family === other.family && a.value === other.value);
      return local || firstMatch(table.rules, packet, view.groups) === 'permit';
    }
    return (tiers && tieredMatch(tiers.baseline, tiers.baselineBreaks, packet, view.groups)) !== 'deny';
  };
  return (
    side(view.podAt(packet.src), 'egress', packet.dst) && side(view.podAt(packet.dst), 'ingress', packet.src)
  );
}
