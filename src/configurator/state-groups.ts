/**
 * Group references against the live store: `key` is a whole group, `key#port` one named-port
 * partition of it. Lookups are constant time (the store keeps each group's addresses indexed);
 * renderers that expand groups into addresses use `referenceMembers`.
 */
import type { IpAddress } from '../net/ip.ts';
import type { ReadonlyStore, GroupMember } from '../state/index.ts';
import type { GroupExpansion } from './table-evaluator.ts';
import { PARTITION_SEPARATOR } from './types.ts';

interface GroupReference {
  readonly key: string;
  /** The named-port number of a partition reference. */
  readonly port?: number;
}

/** Splits `key#port` (a partition) from `key` (a whole group). */
export function parseGroupReference(reference: string): GroupReference {
  const cut = reference.lastIndexOf(PARTITION_SEPARATOR);
  if (cut >= 0 && /^[0-9]+$/.test(reference.slice(cut + 1)))
    return { key: reference.slice(0, cut), port: Number(reference.slice(cut + 1)) };
  return { key: reference };
}

/** The members a reference stands for: the group's, or those resolving its named port to the number. */
export function referenceMembers(state: ReadonlyStore, reference: string | GroupReference): GroupMember[] {
  const { key, port } = typeof reference === 'string' ? parseGroupReference(reference) : reference;
  const members: GroupMember[] = [];
  for (const member of state.group(key)?.members.values() ?? [])
    if (port === undefined || member.port === port) members.push(member);
  return members;
}

/** Every address of a reference's members, without repeats. */
export function referenceAddresses(state: ReadonlyStore, reference: string): IpAddress[] {
  const seen = new Map<string, IpAddress>();
  for (const member of referenceMembers(state, reference))
    for (const ip of member.ips) seen.set(`${ip.family}:${ip.value}`, ip);
  return [...seen.values()];
}

export function stateGroupLookup(state: ReadonlyStore): GroupExpansion {
  // References are parsed once each: lookups are on the hot path of CombineRules.
  const parsed = new Map<string, GroupReference>();
  return {
    has(reference: string, ip: IpAddress): boolean {
      let target = parsed.get(reference);
      if (!target) {
        target = parseGroupReference(reference);
        if (parsed.size > 100_000) parsed.clear();
        parsed.set(reference, target);
      }
      return state.group(target.key)?.contains(ip, target.port) ?? false;
    },
    addresses: (reference: string) => referenceAddresses(state, reference),
  };
}
