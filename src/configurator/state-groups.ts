/**
 * Group lookups against the live store: `key` is a whole group, `key#port` one named-port
 * partition of it.
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
      const key = partition ? reference.slice(0, cut) : reference;
      const port = partition ? Number(reference.slice(cut + 1)) : undefined;
      const group = state.group(key);
      if (!group) return false;
      for (const member of group.members.values()) {
        if (port !== undefined && member.port !== port) continue;
        if (member.ips.some((m) => m.family === ip.family && m.value === ip.value)) return true;
      }
      return false;
    },
  };
}
