/**
 * The VPPTCP renderer (seed: Contiv/VPP VPPTCP renderer). Rules are combined into the side the
 * session layer polices per namespace — the pod's own outgoing connections (the renderer cache's
 * `egress` side) — giving each pod (application namespace) a local table, and the ingress rules
 * of all local pods form the node's global table for connections coming in from elsewhere.
 *
 * Session rules hold one prefix per end and one port (0 = any): groups expand to one rule per
 * member address, port ranges to one rule per port, "any protocol" to TCP and UDP. Rules that
 * collide on every key keep the first in the table's order (its first match), and a group does
 * not expand to a host that a host rule already decides entirely (see `sessionRules`), so that
 * the session layer's longest-prefix match gives the table's first-match verdicts. SCTP is not
 * handled by the session layer at all and is reported, not rendered.
 */
import { familyBits, hostCidr } from '../../net/ip.ts';
import type { NetRef, Rule, RuleTable } from '../../model/rule.ts';
import type { ClusterState } from '../../state/index.ts';
import { referenceAddresses } from '../../configurator/index.ts';
import { ownNodeNotes, type CacheSnapshot } from '../cache/index.ts';
import {
  ACTION_ALLOW,
  ACTION_DENY,
  SCOPE_GLOBAL,
  SCOPE_LOCAL,
  sessionRuleKey,
  type NodeSessionRules,
  type SessionRule,
} from './model.ts';

export interface SessionRendering extends NodeSessionRules {
  readonly notes: readonly string[];
}

/** Prefixes a net stands for, per family. */
function prefixes(net: NetRef, state: ClusterState): { family: 4 | 6; prefix: string }[] {
  switch (net.kind) {
    case 'any':
      return [
        { family: 4, prefix: '0.0.0.0/0' },
        { family: 6, prefix: '::/0' },
      ];
    case 'cidr':
      return [
        {
          family: net.cidr.family,
          prefix: net.cidr.text,
        },
      ];
    case 'group':
      return referenceAddresses(state, net.group).map((ip) => ({
        family: ip.family,
        prefix: hostCidr(ip).text,
      }));
  }
}

/**
 * One table's rules as session rules. `local` is the end the table binds to the namespace:
 * in a pod's local table the source (the pod's own outgoing connections), in the global table
 * the destination (a local pod receiving a connection).
 */
function sessionRules(
  table: RuleTable,
  scope: typeof SCOPE_LOCAL | typeof SCOPE_GLOBAL,
  appns: number,
  state: ClusterState,
  notes: Set<string>,
): SessionRule[] {
  const out = new Map<string, SessionRule>();
  const remoteOf = (rule: Rule): NetRef => (scope === SCOPE_LOCAL ? rule.dst : rule.src);
  // First match puts host CIDRs before groups; longest-prefix match does not tell them apart.
  // A host that a host rule decides for every protocol and port (CombineRules' "deny the rest"
  // for a pair) is therefore left out of group expansions, as the seed removes such rules.
  const decided = new Set<string>();
  for (const rule of table.rules) {
    const remote = remoteOf(rule);
    if (
      rule.protocol === 'ANY' &&
      !rule.dstPorts &&
      remote.kind === 'cidr' &&
      remote.cidr.prefix === familyBits(remote.cidr.family)
    )
      for (const p of prefixes(remote, state)) decided.add(p.prefix);
  }
  for (const rule of table.rules) {
    if (rule.protocol === 'SCTP') {
      notes.add('SCTP is not handled by the VPPTCP session layer: SCTP policy is not enforced there');
      continue;
    }
    const protocols: (6 | 17)[] = rule.protocol === 'TCP' ? [6] : rule.protocol === 'UDP' ? [17] : [6, 17];
    const ports = portsOf(rule);
    const [localNet, remoteNet] = scope === SCOPE_LOCAL ? [rule.src, rule.dst] : [rule.dst, rule.src];
    for (const lcl of prefixes(localNet, state))
      for (const rmt of prefixes(remoteNet, state)) {
        if (lcl.family !== rmt.family) continue;
        if (remoteNet.kind === 'group' && decided.has(rmt.prefix)) continue;
        for (const transport_proto of protocols)
          for (const port of ports) {
            const sessionRule: SessionRule = {
              transport_proto,
              is_ip4: lcl.family === 4,
              lcl: lcl.prefix,
              rmt: rmt.prefix,
              lcl_port: scope === SCOPE_GLOBAL ? port : 0,
              rmt_port: scope === SCOPE_LOCAL ? port : 0,
              action_index: rule.action === 'permit' ? ACTION_ALLOW : ACTION_DENY,
              appns_index: appns,
              scope,
              tag: `${table.id}`,
            };
            const key = sessionRuleKey(sessionRule);
            if (!out.has(key)) out.set(key, sessionRule);
          }
      }
  }
  return [...out.values()];
}

function portsOf(rule: Rule): number[] {
  if (!rule.dstPorts) return [0];
  const [from, to] = rule.dstPorts;
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** A node's session rules from the renderer cache's snapshot (cache side: egress). */
export function renderSessionRules(snapshot: CacheSnapshot, state: ClusterState): SessionRendering {
  const notes = new Set<string>(ownNodeNotes(snapshot));
  const pods = [...snapshot.binding.keys()].sort();
  const namespaces = pods.map((pod, i) => ({ pod, appns_index: i + 1 }));
  const rules: SessionRule[] = [];
  for (const { pod, appns_index } of namespaces) {
    const table = snapshot.tables.get(snapshot.binding.get(pod) ?? '');
    // Loops, not spreads: an expanded port range can give hundreds of thousands of rules.
    if (table)
      for (const rule of sessionRules(table, SCOPE_LOCAL, appns_index, state, notes)) rules.push(rule);
  }
  for (const rule of sessionRules(snapshot.global, SCOPE_GLOBAL, 0, state, notes)) rules.push(rule);
  return { namespaces, rules, notes: [...notes].sort() };
}

/** The minimal add/delete list between two renderings of a node. */
export function sessionTransaction(
  before: readonly SessionRule[],
  after: readonly SessionRule[],
): { readonly add: readonly SessionRule[]; readonly delete: readonly SessionRule[] } {
  const text = (r: SessionRule): string => `${sessionRuleKey(r)}|${r.action_index}`;
  const old = new Set(before.map(text));
  const next = new Set(after.map(text));
  return { add: after.filter((r) => !old.has(text(r))), delete: before.filter((r) => !next.has(text(r))) };
}
