/**
 * One pod's table for one cluster-policy tier and direction: Mizar's maps, with the rule slots
 * numbered in precedence order (policy by priority, then rule order), so the lowest set bit of
 * `peers & ports` is the rule that decides, and its action (allow, deny, pass) is the answer —
 * priorities come from bit order, no ordered scan. Slots as in NetworkPolicy tables: a rule's
 * peers with its plain ports; for an egress named port, one slot per number it resolves to on the
 * destinations. A fail-closed Deny or Pass rule is a slot matching everything (deny).
 */
import { makeCidr, type Cidr } from '../net/ip.ts';
import { clusterPolicyLabel, namedPortTargets } from '../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterPort, ClusterRule, Endpoint, Protocol, Tier } from '../model/types.ts';
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
  /** Shared peer groups (pods, nodes) whose members the slot matches. */
  readonly groups: readonly number[];
  readonly ports: 'all' | readonly { protocol: Protocol; from?: number; to?: number }[];
  readonly action: number;
  readonly label: string;
}

const ANYWHERE: Cidr[] = [makeCidr(4, 0n, 0), makeCidr(6, 0n, 0)];
const ACTION_OF = { allow: ACTION_ALLOW, deny: ACTION_DENY, pass: ACTION_PASS } as const;

/** The sharing key of a pod's table: equal keys give equal tables. */
const baseKeys = new WeakMap<readonly ClusterPolicy[], { key: string; relative: boolean; named: boolean }>();

/** The sharing key of a pod's table: equal keys give equal tables. */
export function tierTableKey(
  sources: TierSources,
  pod: Endpoint,
  tier: Tier,
  direction: 'ingress' | 'egress',
): string {
  const policies = sources.selecting(pod, tier, direction);
  if (policies.length === 0) return '';
  let base = baseKeys.get(policies);
  if (!base) {
    base = {
      key: `${tier}|${direction}|${policies.map(clusterPolicyLabel).join(',')}`,
      relative: policies.some((p) => TierSources.isRelative(p)),
      named:
        direction === 'ingress' &&
        policies.some((p) => p.ingress.some((r) => r.ports?.some((x) => x.type === 'named'))),
    };
    baseKeys.set(policies, base);
  }
  if (!base.relative && !base.named) return base.key;
  return [
    base.key,
    base.relative ? pod.namespace : '',
    base.named ? pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',') : '',
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
  table.useGroups(sources);
  const actions = new Uint8Array(slots.length);
  slots.forEach((slot, bit) => {
    actions[bit] = slot.action;
    table.labels.push(slot.label);
    for (const cidr of slot.cidrs) table.addCidr('prim', cidr, cidr.text, bit);
    for (const group of slot.groups) table.addGroup(group, bit);
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
      : [
          {
            cidrs: ANYWHERE,
            groups: [],
            ports: 'all',
            action: ACTION_DENY,
            label: `${label} (fails closed)`,
          },
        ];
  }
  const cidrs: Cidr[] = [];
  const groups: number[] = [];
  for (const peer of rule.peers) {
    if (peer.type === 'pods' || peer.type === 'nodes') groups.push(sources.groupOf(peer, pod.namespace));
    else if (peer.type === 'networks') cidrs.push(...peer.cidrs);
    // domainNames: no address is known to a datapath that cannot resolve names; it matches nothing.
  }
  if (!rule.ports) return [{ cidrs, groups, ports: 'all', action, label }];
  const slots: TierSlot[] = [];
  const plain = rule.ports.flatMap((p) => plainPorts(p, direction, pod));
  if (plain.length) slots.push({ cidrs, groups, ports: plain, action, label });
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
  return namedPortTargets(pod.ports, port.name).map((p) => ({
    protocol: p.protocol,
    from: p.port,
    to: p.port,
  }));
}

/** An egress named port: one slot per (protocol, number) it resolves to, matching the destinations that resolve it so. */
function namedPortSlots(
  sources: TierSources,
  pod: Endpoint,
  rule: ClusterRule,
  action: number,
  label: string,
): TierSlot[] {
  const byNumber = new Map<string, { protocol: Protocol; port: number; groups: number[] }>();
  for (const entry of rule.ports ?? []) {
    if (entry.type !== 'named') continue;
    for (const peer of rule.peers) {
      if (peer.type !== 'pods') continue;
      for (const key of sources.namedPortNumbers(peer, pod.namespace, entry.name)) {
        const [protocol, number] = key.split('/') as [Protocol, string];
        const slot = byNumber.get(key) ?? { protocol, port: Number(number), groups: [] };
        slot.groups.push(sources.namedPortGroup(peer, pod.namespace, entry.name, protocol, Number(number)));
        byNumber.set(key, slot);
      }
    }
  }
  return [...byNumber.values()].map((s) => ({
    cidrs: [],
    groups: s.groups,
    ports: [{ protocol: s.protocol, from: s.port, to: s.port }],
    action,
    label: `${label} port ${s.protocol}/${s.port}`,
  }));
}
