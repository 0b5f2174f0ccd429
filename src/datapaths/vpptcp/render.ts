/**
 * The VPPTCP renderer (seed: Contiv/VPP VPPTCP renderer). Rules are combined into the side the
 * session layer polices per namespace — the pod's own outgoing connections (the renderer cache's
 * `egress` side) — giving each pod (application namespace) a local table, and the ingress rules
 * of all local pods form the node's global table for connections coming in from elsewhere.
 *
 * Session rules hold one prefix per end and one port (0 = any): groups expand to one rule per
 * member address, "any protocol" to TCP and UDP, and per pair of prefixes each port gets the
 * verdict of the table's first rule for it — where the table decides every port there, the
 * any-port rule takes the most common verdict and only the other ports are listed (see
 * `portRules`). A group does not expand to a host that a host rule already decides entirely (see
 * `sessionRules`), so that the session layer's longest-prefix match gives the table's
 * first-match verdicts. SCTP is not
 * handled by the session layer at all and is reported, not rendered.
 */
import { familyBits, hostCidr } from '../../net/ip.ts';
import { MAX_PORT, MIN_PORT } from '../../model/port-set.ts';
import type { NetRef, Rule, RuleTable } from '../../model/rule.ts';
import type { ReadonlyStore } from '../../state/index.ts';
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
function prefixes(net: NetRef, state: ReadonlyStore): { family: 4 | 6; prefix: string }[] {
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
    case 'outside':
      throw new Error('blocks outside the cluster reach VPP flattened (renderers/cache/flatten-tiers.ts)');
  }
}

/** One table's rule for one (local, remote, protocol) key: its ports (undefined: any) and action. */
interface KeyedRule {
  readonly ports?: readonly [number, number];
  readonly allow: boolean;
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
  state: ReadonlyStore,
  notes: Set<string>,
): SessionRule[] {
  const ends = (rule: Rule): [NetRef, NetRef] =>
    scope === SCOPE_LOCAL ? [rule.src, rule.dst] : [rule.dst, rule.src];
  // First match puts host CIDRs before groups; longest-prefix match does not tell them apart.
  // A host that a host rule decides for every protocol and port (CombineRules' "deny the rest"
  // for a pair) is therefore left out of group expansions, as the seed removes such rules —
  // for the same local end only: the global table holds every local pod's rules.
  const decided = new Set<string>();
  for (const rule of table.rules) {
    const [local, remote] = ends(rule);
    if (
      rule.protocol === 'ANY' &&
      !rule.dstPorts &&
      remote.kind === 'cidr' &&
      remote.cidr.prefix === familyBits(remote.cidr.family)
    )
      for (const l of prefixes(local, state))
        for (const r of prefixes(remote, state)) decided.add(`${l.prefix}|${r.prefix}`);
  }
  // Rules per session key without the port, in table order (so first match per port).
  const keyed = new Map<
    string,
    { lcl: string; rmt: string; family: 4 | 6; proto: 6 | 17; rules: KeyedRule[] }
  >();
  for (const rule of table.rules) {
    if (rule.protocol === 'SCTP') {
      notes.add('SCTP is not handled by the VPPTCP session layer: SCTP policy is not enforced there');
      continue;
    }
    const protocols: (6 | 17)[] = rule.protocol === 'TCP' ? [6] : rule.protocol === 'UDP' ? [17] : [6, 17];
    const [localNet, remoteNet] = ends(rule);
    for (const lcl of prefixes(localNet, state))
      for (const rmt of prefixes(remoteNet, state)) {
        if (lcl.family !== rmt.family) continue;
        if (remoteNet.kind === 'group' && decided.has(`${lcl.prefix}|${rmt.prefix}`)) continue;
        for (const proto of protocols) {
          const key = `${lcl.prefix}|${rmt.prefix}|${proto}`;
          let entry = keyed.get(key);
          if (!entry)
            keyed.set(
              key,
              (entry = { lcl: lcl.prefix, rmt: rmt.prefix, family: lcl.family, proto, rules: [] }),
            );
          entry.rules.push({
            ...(rule.dstPorts ? { ports: rule.dstPorts } : {}),
            allow: rule.action === 'permit',
          });
        }
      }
  }
  const out: SessionRule[] = [];
  for (const { lcl, rmt, family, proto, rules } of keyed.values())
    for (const { port, allow } of portRules(rules)) {
      out.push({
        transport_proto: proto,
        is_ip4: family === 4,
        lcl,
        rmt,
        lcl_port: scope === SCOPE_GLOBAL ? port : 0,
        rmt_port: scope === SCOPE_LOCAL ? port : 0,
        action_index: allow ? ACTION_ALLOW : ACTION_DENY,
        appns_index: appns,
        scope,
        tag: `${table.id}`,
      });
    }
  return out;
}

/**
 * One key's rules (first match per port) as session-rule ports (0: any). A session rule holds
 * one port, so ranges expand — but when the key decides every port (it has an any-port rule),
 * the any-port rule takes the verdict most ports have and only the other ports get their own
 * rules: "deny port 80, allow the rest" is two rules, not 65,535.
 */
function portRules(rules: readonly KeyedRule[]): { port: number; allow: boolean }[] {
  const fallback = rules.find((r) => !r.ports);
  // Ports up to the any-port rule decide first; after it nothing else matters.
  const ranged = rules.slice(0, fallback ? rules.indexOf(fallback) : rules.length);
  const segments = firstMatchSegments(ranged);
  if (!fallback)
    return segments.flatMap(({ from, to, allow }) =>
      Array.from({ length: to - from + 1 }, (_, i) => ({ port: from + i, allow })),
    );
  let allowed = 0;
  let covered = 0;
  for (const { from, to, allow } of segments) {
    covered += to - from + 1;
    if (allow) allowed += to - from + 1;
  }
  if (fallback.allow) allowed += MAX_PORT - MIN_PORT + 1 - covered;
  const majority = allowed * 2 >= MAX_PORT - MIN_PORT + 1;
  const exceptions: { port: number; allow: boolean }[] = [];
  let next = MIN_PORT;
  const add = (from: number, to: number, allow: boolean): void => {
    if (allow !== majority) for (let port = from; port <= to; port++) exceptions.push({ port, allow });
  };
  for (const { from, to, allow } of segments) {
    if (from > next) add(next, from - 1, fallback.allow);
    add(from, to, allow);
    next = to + 1;
  }
  if (next <= MAX_PORT) add(next, MAX_PORT, fallback.allow);
  return [{ port: 0, allow: majority }, ...exceptions];
}

/** Disjoint, sorted port segments with the first matching rule's verdict (uncovered ports left out). */
function firstMatchSegments(rules: readonly KeyedRule[]): { from: number; to: number; allow: boolean }[] {
  const bounds = new Set<number>();
  for (const { ports } of rules) if (ports) bounds.add(ports[0]).add(ports[1] + 1);
  const cuts = [...bounds].sort((a, b) => a - b);
  const segments: { from: number; to: number; allow: boolean }[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    const from = cuts[i] as number;
    const to = (cuts[i + 1] as number) - 1;
    const first = rules.find((r) => r.ports && r.ports[0] <= from && to <= r.ports[1]);
    if (!first) continue;
    const last = segments[segments.length - 1];
    if (last && last.to === from - 1 && last.allow === first.allow) last.to = to;
    else segments.push({ from, to, allow: first.allow });
  }
  return segments;
}

/** A node's session rules from the renderer cache's snapshot (cache side: egress). */
export function renderSessionRules(snapshot: CacheSnapshot, state: ReadonlyStore): SessionRendering {
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
