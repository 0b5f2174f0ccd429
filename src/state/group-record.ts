/**
 * One address group's record: its members, the named-port numbers they resolve to, the
 * policies that hold it, and the address index behind `contains`.
 */
import { ipKey, type IpAddress } from '../net/ip.ts';
import type { AddressGroup, GroupMember, GroupSpec } from './types.ts';

/** Groups without a named port never count port numbers: they share this empty map. */
const NO_PORTS: Map<number, number> = new Map();

/**
 * A group and its members. The address index behind `contains` (member count per address, and
 * per named-port number and address) is built on the first `contains` and kept up to date from
 * then on: a full compile makes tens of thousands of groups that only renderers and analysis
 * ask about addresses in, and two Maps per group were a tenth of the store's memory.
 */
export class GroupRecord implements AddressGroup {
  readonly members = new Map<string, GroupMember>();
  readonly ports: Map<number, number>;
  readonly policies = new Set<string>();
  private index: AddressIndex | undefined;

  constructor(
    readonly key: string,
    readonly spec: GroupSpec,
  ) {
    this.ports = spec.namedPort ? new Map<number, number>() : NO_PORTS;
  }

  contains(ip: IpAddress, port?: number): boolean {
    const index = (this.index ??= this.buildIndex());
    const where = port === undefined ? index.addresses : index.portAddresses.get(port);
    return (where?.get(ipKey(ip)) ?? 0) > 0;
  }

  /** Adds (+1) or removes (-1) a member's addresses from the address index, if it is built. */
  countAddresses(member: GroupMember | undefined, delta: number): void {
    if (member && this.index) countMember(this.index, member, delta);
  }

  private buildIndex(): AddressIndex {
    const index: AddressIndex = { addresses: new Map(), portAddresses: new Map() };
    for (const member of this.members.values()) countMember(index, member, 1);
    return index;
  }
}

interface AddressIndex {
  readonly addresses: Map<string, number>;
  readonly portAddresses: Map<number, Map<string, number>>;
}

function countMember(index: AddressIndex, member: GroupMember, delta: number): void {
  const maps = [index.addresses];
  if (member.port !== undefined) {
    let byPort = index.portAddresses.get(member.port);
    if (!byPort) index.portAddresses.set(member.port, (byPort = new Map<string, number>()));
    maps.push(byPort);
  }
  for (const map of maps) {
    for (const ip of member.ips) {
      const key = ipKey(ip);
      const next = (map.get(key) ?? 0) + delta;
      if (next > 0) map.set(key, next);
      else map.delete(key);
    }
  }
  if (member.port !== undefined && index.portAddresses.get(member.port)?.size === 0)
    index.portAddresses.delete(member.port);
}

/** Keeps, per group, how many members resolve its named port to each number. */
export function countPort(ports: Map<number, number>, port: number | undefined, delta: number): boolean {
  if (port === undefined) return false;
  const before = ports.get(port) ?? 0;
  const next = before + delta;
  if (next > 0) ports.set(port, next);
  else ports.delete(port);
  return (before === 0) !== next <= 0;
}
