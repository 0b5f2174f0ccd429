/**
 * Group lookups against the live store: `key` is a whole group, `key#port` one named-port
 * partition of it. Constant time per lookup (the store keeps each group's addresses indexed).
 */
import type { IpAddress } from '../net/ip.ts';
import type { ClusterState } from '../state/index.ts';
import type { GroupLookup } from './table-evaluator.ts';
import { PARTITION_SEPARATOR } from './types.ts';

export function stateGroupLookup(state: ClusterState): GroupLookup {
  return {
    has(reference: string, ip: IpAddress): boolean {
      const cut = reference.lastIndexOf(PARTITION_SEPARATOR);
      const partition = cut >= 0 && /^[0-9]+$/.test(reference.slice(cut + 1));
      const group = state.group(partition ? reference.slice(0, cut) : reference);
      return group?.contains(ip, partition ? Number(reference.slice(cut + 1)) : undefined) ?? false;
    },
  };
}
