/**
 * Group lookups against the live store: `key` is a whole group, `key#port` one named-port
 * partition of it. Constant time per lookup (the store keeps each group's addresses indexed).
 */
import type { IpAddress } from '../net/ip.ts';
import type { ClusterState } from '../state/index.ts';
import type { GroupLookup } from './table-evaluator.ts';
import { PARTITION_SEPARATOR } from './types.ts';

export function stateGroupLookup(state: ClusterState): GroupLookup {
  // References are parsed once each: lookups are on the hot path of CombineRules.
  const parsed = new Map<string, { key: string; port?: number }>();
  return {
    has(reference: string, ip: IpAddress): boolean {
      let target = parsed.get(reference);
      if (!target) {
        const cut = reference.lastIndexOf(PARTITION_SEPARATOR);
        const partition = cut >= 0 && /^[0-9]+$/.test(reference.slice(cut + 1));
        target = partition
          ? { key: reference.slice(0, cut), port: Number(reference.slice(cut + 1)) }
          : { key: reference };
        if (parsed.size > 100_000) parsed.clear();
        parsed.set(reference, target);
      }
      return state.group(target.key)?.contains(ip, target.port) ?? false;
    },
  };
}
