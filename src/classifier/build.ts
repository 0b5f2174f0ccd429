/**
 * Builds an endpoint's maps for one direction from the policies that select it. Each rule gets
 * rule slots (bits) of its own — the seed numbers policies, but one bit per policy would let a
 * peer of one rule combine with a port of another rule of the same policy:
 * - one slot for the rule's plain peers (selectors' pod addresses and ipBlocks without except,
 *   in the primary map, or everything when the rule has no peers) with its ports;
 * - one slot per ipBlock with except (supplementary and except maps), with the same ports;
 * - for an egress named port, one slot per number it resolves to, holding the addresses of the
 *   destinations that resolve it so (the port map cannot depend on the destination).
 * Ingress named ports resolve on the endpoint itself.
 */
import { makeCidr, type Cidr } from '../net/ip.ts';
import type { Endpoint, NetworkPolicy, Peer, PolicyPort, PolicyRule } from '../model/types.ts';
import { groupKey, portNumbers, ruleNets, selectorGroupSpec, type ReadonlyStore } from '../state/index.ts';
import { DirectionTable } from './direction-table.ts';
import { PARTITION_SEPARATOR } from '../configurator/types.ts';
import type { StateGroupResolver } from './state-group-resolver.ts';

type Direction = 'ingress' | 'egress';

const ANYWHERE: Cidr[] = [makeCidr(4, 0n, 0), makeCidr(6, 0n, 0)];

/** What one slot holds before bits are placed: the CIDR map entries and the port entries. */
interface Slot {
  readonly cidrs: { map: 'prim' | 'supp' | 'except'; cidr: Cidr }[];
  readonly ports: PolicyPort[] | 'all';
  /** For an egress named-port slot: the one number it stands for. */
  readonly number?: number;
  readonly label: string;
  /** Groups (or named-port partitions `key#n`) whose members the slot matches, through the group layer. */
  readonly groups?: readonly string[];
}

function slotsOf(
  state: ReadonlyStore,
  policy: NetworkPolicy,
  direction: Direction,
  rule: PolicyRule,
  referenced: string[],
): Slot[] {
  const slots: Slot[] = [];
  const label = `${policy.namespace}/${policy.name} ${direction}[${rule.index}]`;
  const entries = rule.ports === undefined || rule.ports.length === 0 ? 'all' : rule.ports;
  const named =
    entries === 'all' ? [] : entries.filter((p) => direction === 'egress' && typeof p.port === 'string');
  const plain =
    entries === 'all'
      ? 'all'
      : entries.filter((p) => !(direction === 'egress' && typeof p.port === 'string'));
  if (plain === 'all' || plain.length > 0) {
    const peers: readonly Peer[] | undefined =
      rule.peers === undefined || rule.peers.length === 0 ? undefined : rule.peers;
    if (!peers) slots.push({ cidrs: ANYWHERE.map((cidr) => ({ map: 'prim', cidr })), ports: plain, label });
    else {
      const prim: Slot['cidrs'] = [];
      const groups: string[] = [];
      for (const peer of peers) {
        if (peer.type === 'ipBlock') {
          if (peer.except.length === 0) prim.push({ map: 'prim', cidr: peer.cidr });
          else
            slots.push({
              cidrs: [
                { map: 'supp', cidr: peer.cidr },
                ...peer.except.map((cidr) => ({ map: 'except' as const, cidr })),
              ],
              ports: plain,
              label: `${label} ipBlock ${peer.cidr.text} except ${peer.except.map((c) => c.text).join(',')}`,
            });
        } else {
          groups.push(groupKey(selectorGroupSpec(policy, peer)));
        }
      }
      // A slot of selectors is kept even while they select nobody: members may come later.
      if (prim.length > 0 || groups.length > 0) slots.push({ cidrs: prim, ports: plain, label, groups });
    }
  }
  for (const entry of named) {
    // The destinations that resolve the name, by number: one partition group per number.
    const byNumber = new Map<number, string[]>();
    for (const net of ruleNets(policy, direction, rule, entry)) {
      if (net.kind !== 'group') continue;
      const key = groupKey(net.spec);
      referenced.push(key);
      for (const number of portNumbers(state.group(key))) {
        const list = byNumber.get(number) ?? [];
        list.push(`${key}${PARTITION_SEPARATOR}${number}`);
        byNumber.set(number, list);
      }
    }
    for (const [number, refs] of byNumber)
      slots.push({
        cidrs: [],
        ports: [entry],
        number,
        label: `${label} port ${String(entry.port)}=${number}`,
        groups: refs,
      });
  }
  return slots;
}

/** The endpoint's table for a direction, or undefined when no policy isolates it there. */
export function buildDirectionTable(
  state: ReadonlyStore,
  pod: Endpoint,
  direction: Direction,
  resolver: StateGroupResolver,
): DirectionTable | undefined {
  const selection = state.selection(pod);
  const policies = direction === 'ingress' ? selection.ingress : selection.egress;
  if (policies.length === 0) return undefined;
  const slots: Slot[] = [];
  // Named-port groups are referenced even when no destination resolves the name yet.
  const referenced: string[] = [];
  for (const policy of policies)
    for (const rule of policy[direction])
      for (const slot of slotsOf(state, policy, direction, rule, referenced)) slots.push(slot);
  const table = new DirectionTable(slots.length);
  table.useGroups(resolver);
  for (const g of referenced) table.groups.add(g);
  slots.forEach((slot, bit) => {
    table.labels.push(slot.label);
    for (const ref of slot.groups ?? []) {
      table.addGroup(resolver.idOf(ref), bit);
      // Named-port partitions change the table's slots when their numbers change: remember the group.
      const separator = ref.indexOf(PARTITION_SEPARATOR);
      if (separator >= 0) table.groups.add(ref.slice(0, separator));
    }
    for (const { map, cidr } of slot.cidrs) table.addCidr(map, cidr, cidr.text, bit);
    if (slot.ports === 'all') {
      table.addL3(bit);
      return;
    }
    for (const port of slot.ports) {
      if (slot.number !== undefined) table.addPort(port.protocol, slot.number, bit);
      else if (port.port === undefined) table.addProtocol(port.protocol, bit);
      else if (typeof port.port === 'string') {
        const name = port.port;
        const resolved = pod.ports.find((p) => p.name === name && p.protocol === port.protocol)?.port;
        if (resolved !== undefined) table.addPort(port.protocol, resolved, bit);
      } else if (port.endPort !== undefined && port.endPort > port.port)
        table.addRange(port.protocol, port.port, port.endPort, bit);
      else table.addPort(port.protocol, port.port, bit);
    }
  });
  return table;
}
