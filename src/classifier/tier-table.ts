/**
 * One pod's table for one cluster-policy tier and direction: Mizar's maps, with the rule slots
 * numbered in precedence order (policy by priority, then rule order), so the lowest set bit of
 * `peers & ports` is the rule that decides, and its action (allow, deny, pass) is the answer —
 * priorities come from bit order, no ordered scan. Slots as in NetworkPolicy tables: a rule's
 * peers with its plain ports; for an egress named port, one slot per number it resolves to on the
 * destinations. A fail-closed Deny or Pass rule is a slot matching everything (deny).
 */
import { hostCidr, makeCidr, type Cidr } from '../net/ip.ts';
import { clusterPolicyLabel } from '../model/cluster-policy.ts';
import type { ClusterPort, ClusterRule, Endpoint, Protocol, Tier } from '../model/types.ts';
import { DirectionTable } from './direction-table.ts';
import { TierSources } from './tier-sources.ts';

export const ACTION_ALLOW = 0;
export const ACTION_DENY = 1;
export const ACTION_PASS = 2;

export interface TierTable {
  readonly table: DirectionTable;
  /** Per slot: ACTION_ALLOW, ACTION_DENY or ACTION_PASS. */
  readonly actions: Uint8Array;
}

interface TierSlot {
  readonly cidrs: readonly Cidr[];
  readonly ports: 'all' | readonly { protocol: Protocol; from?: number; to?: number }[];
  readonly action: number;
  readonly label: string;
}

const ANYWHERE: Cidr[] = [makeCidr(4, 0n, 0), makeCidr(6, 0n, 0)];
const ACTION_OF = { allow: ACTION_ALLOW, deny: ACTION_DENY, pass: ACTION_PASS } as const;

/** The sharing key of a pod's table: equal keys give equal tables. */
export function tierTableKey(
  sources: TierSources,
  pod: Endpoint,
  tier: Tier,
  direction: 'ingress' | 'egress',
): string {
  const policies = sources.selecting(pod, tier, direction);
  if (policies.length === 0) return '';
  const relative = policies.some((p) => TierSources.isRelative(p));
  const named =
    direction === 'ingress' &&
    policies.some((p) => p.ingress.some((r) => r.ports?.some((x) => x.type === 'named')));
  return [
    tier,
    direction,
    policies.map(clusterPolicyLabel).join(','),
    relative ? pod.namespace : '',
    named ? pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',') : '',
  ].join('|');
}

export function buildTierTable(
  sources: TierSources,
  pod: Endpoint,
  tier: Tier,
  direction: 'ingress' | 'egress',
): TierTable | undefined {
  const policies = sources.selecting(pod, tier, direction);
  if (policies.length === 0) return undefined;
  const slots: TierSlot[] = [];
  for (const policy of policies)
    for (const rule of policy[direction])
      slots.push(
        ...ruleSlots(
          sources,
          pod,
          direction,
          rule,
          `${clusterPolicyLabel(policy)} ${direction}[${rule.index}]`,
        ),
      );
  const table = new DirectionTable(slots.length);
  const actions = new Uint8Array(slots.length);
  slots.forEach((slot, bit) => {
    actions[bit] = slot.action;
    table.labels.push(slot.label);
    for (const cidr of slot.cidrs) table.addCidr('prim', cidr, cidr.text, bit);
    if (slot.ports === 'all') return table.addL3(bit);
    for (const { protocol, from, to } of slot.ports) {
      if (from === undefined) table.addProtocol(protocol, bit);
      else if (to !== undefined && to > from) table.addRange(protocol, from, to, bit);
      else table.addPort(protocol, from, bit);
    }
  });
  return { table, actions };
}

function ruleSlots(
  sources: TierSources,
  pod: Endpoint,
  direction: 'ingress' | 'egress',
  rule: ClusterRule,
  label: string,
): TierSlot[] {
  const action = ACTION_OF[rule.action];
  if (rule.failClosed) {
    return rule.action === 'allow'
      ? []
      : [{ cidrs: ANYWHERE, ports: 'all', action: ACTION_DENY, label: `${label} (fails closed)` }];
  }
  const cidrs: Cidr[] = [];
  for (const peer of rule.peers) {
    if (peer.type === 'pods')
      for (const member of sources.podsOf(peer, pod.namespace)) cidrs.push(...member.ips.map(hostCidr));
    else if (peer.type === 'networks') cidrs.push(...peer.cidrs);
    else if (peer.type === 'nodes') cidrs.push(...sources.nodeAddresses(peer).map(hostCidr));
    // domainNames: no address is known to a datapath that cannot resolve names; it matches nothing.
  }
  if (!rule.ports) return [{ cidrs, ports: 'all', action, label }];
  const slots: TierSlot[] = [];
  const plain = rule.ports.flatMap((p) => plainPorts(p, direction, pod));
  if (plain.length) slots.push({ cidrs, ports: plain, action, label });
  if (direction === 'egress') slots.push(...namedPortSlots(sources, pod, rule, action, label));
  return slots;
}

/** Numbered ports as they are; an ingress named port resolved on the pod itself (any protocol). */
function plainPorts(port: ClusterPort, direction: 'ingress' | 'egress', pod: Endpoint) {
  if (port.type === 'number') {
    return [
      {
        protocol: port.protocol,
        ...(port.port !== undefined ? { from: port.port, to: port.endPort ?? port.port } : {}),
      },
    ];
  }
  if (direction === 'egress') return [];
  return pod.ports
    .filter((p) => p.name === port.name)
    .map((p) => ({ protocol: p.protocol, from: p.port, to: p.port }));
}

/** An egress named port: one slot per (protocol, number) it resolves to, holding the destinations that resolve it so. */
function namedPortSlots(
  sources: TierSources,
  pod: Endpoint,
  rule: ClusterRule,
  action: number,
  label: string,
): TierSlot[] {
  const byNumber = new Map<string, { protocol: Protocol; port: number; cidrs: Cidr[] }>();
  for (const entry of rule.ports ?? []) {
    if (entry.type !== 'named') continue;
    for (const peer of rule.peers) {
      if (peer.type !== 'pods') continue;
      for (const member of sources.podsOf(peer, pod.namespace)) {
        for (const port of member.ports) {
          if (port.name !== entry.name) continue;
          const key = `${port.protocol}/${port.port}`;
          const slot = byNumber.get(key) ?? { protocol: port.protocol, port: port.port, cidrs: [] };
          slot.cidrs.push(...member.ips.map(hostCidr));
          byNumber.set(key, slot);
        }
      }
    }
  }
  return [...byNumber.values()].map((s) => ({
    cidrs: s.cidrs,
    ports: [{ protocol: s.protocol, from: s.port, to: s.port }],
    action,
    label: `${label} port ${s.protocol}/${s.port}`,
  }));
}
