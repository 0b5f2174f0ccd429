/**
 * Matches connections against session rules as VPP's session layer does: within a table the
 * most specific matching rule wins (longest remote prefix, then longest local prefix, then a
 * specific port over "any"); no matching rule allows. A pod's outgoing connection is matched
 * against its namespace's local table; a connection arriving from another node (or from outside)
 * against the receiving node's global table. Between two pods of the same node the global table
 * is bypassed (the seed's fall-through): only the source's local table decides — which is why
 * CombineRules folds the destination's ingress rules into it.
 */
import { cidrContains, parseCidr, type IpAddress } from '../../net/ip.ts';
import { ACTION_ALLOW, SCOPE_GLOBAL, SCOPE_LOCAL, type SessionRule } from './model.ts';

interface SessionPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
}

const prefixLength = (prefix: string): number => Number(prefix.slice(prefix.indexOf('/') + 1));

function contains(prefix: string, ip: IpAddress): boolean {
  const cidr = parseCidr(prefix);
  return cidr.ok && cidrContains(cidr.value, ip);
}

/** Rules bucketed by table, protocol and port (0 = any), built once per rule list. */
const indexes = new WeakMap<readonly SessionRule[], Map<string, SessionRule[]>>();
function bucket(rules: readonly SessionRule[], key: string): readonly SessionRule[] {
  let index = indexes.get(rules);
  if (!index) {
    index = new Map();
    for (const rule of rules) {
      const port = rule.scope === SCOPE_LOCAL ? rule.rmt_port : rule.lcl_port;
      const k = `${rule.scope}|${rule.appns_index}|${rule.transport_proto}|${port}`;
      const list = index.get(k);
      if (list) list.push(rule);
      else index.set(k, [rule]);
    }
    indexes.set(rules, index);
  }
  return index.get(key) ?? [];
}

/** The winning rule's verdict for one table (`local`: the namespace's end of the connection). */
function lookup(
  rules: readonly SessionRule[],
  local: IpAddress,
  remote: IpAddress,
  packet: SessionPacket,
  scope: number,
  appns: number,
): boolean {
  const proto = packet.protocol === 'TCP' ? 6 : 17;
  let best: SessionRule | undefined;
  let bestRank = -1;
  for (const port of [packet.port, 0]) {
    for (const rule of bucket(rules, `${scope}|${appns}|${proto}|${port}`)) {
      if ((rule.is_ip4 ? 4 : 6) !== local.family) continue;
      if (!contains(rule.lcl, local) || !contains(rule.rmt, remote)) continue;
      const rank = prefixLength(rule.rmt) * 1000 + prefixLength(rule.lcl) * 2 + (port !== 0 ? 1 : 0);
      if (rank > bestRank) {
        best = rule;
        bestRank = rank;
      }
    }
  }
  return !best || best.action_index === ACTION_ALLOW;
}

/** A pod's outgoing connection, through its namespace's local table. */
export function localAllows(rules: readonly SessionRule[], appns: number, packet: SessionPacket): boolean {
  return lookup(rules, packet.src, packet.dst, packet, SCOPE_LOCAL, appns);
}

/** A connection arriving at a node for one of its pods, through the global table. */
export function globalAllows(rules: readonly SessionRule[], packet: SessionPacket): boolean {
  return lookup(rules, packet.dst, packet.src, packet, SCOPE_GLOBAL, 0);
}
