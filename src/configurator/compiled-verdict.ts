/**
 * A whole-cluster verdict from compiled tables, for one packet: the source pod's egress table
 * and the destination pod's ingress table must both permit it (a pod without a table in a
 * direction is not isolated). Traffic between a pod and its own node is allowed before any
 * table, as the datapaths do (optional).
 */
import type { IpAddress } from '../net/ip.ts';
import type { Endpoint } from '../model/types.ts';
import { firstMatch, type GroupLookup, type Packet } from './table-evaluator.ts';
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
    if (
      allowNodeLocal &&
      pod.node &&
      view.nodeAddresses(pod.node).some((a) => a.family === other.family && a.value === other.value)
    ) {
      return true;
    }
    const table = view.tables(pod.id)?.[direction];
    return !table || firstMatch(table.rules, packet, view.groups) === 'permit';
  };
  return (
    side(view.podAt(packet.src), 'egress', packet.dst) && side(view.podAt(packet.dst), 'ingress', packet.src)
  );
}
