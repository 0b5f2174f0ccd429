/**
 * The seed's rule transformations, parametrized by the side a stack can police:
 * - CombineRules: a local pod's table on the chosen side, intersected with what every other
 *   known pod's opposite-side table allows towards it (including itself, for hairpin traffic).
 * - BuildGlobalTable: the opposite-side tables of all local pods in one table, each rule bound
 *   to the pod's own address, ending in permit-the-rest; applied where traffic leaves (ACL) or
 *   enters (VPPTCP) the node.
 * Sides are from the pod's point of view: `ingress` is what the ACL renderer needs (Contiv's
 * vswitch "egress"), `egress` what the VPPTCP renderer needs.
 */
import { hostCidr, type IpAddress } from '../../net/ip.ts';
import { PROTOCOLS } from '../../model/types.ts';
import { intersectPorts, MAX_PORT, MIN_PORT } from '../../model/port-set.ts';
import { ANY_NET, type NetRef, type Rule, type RuleTable } from '../../model/rule.ts';
import { canonicalTable, type GroupLookup, type PodTables } from '../../configurator/index.ts';
import type { RenderedPod } from '../types.ts';
import { isSubset, tablePorts } from './table-ports.ts';

export type Side = 'ingress' | 'egress';

export interface KnownPod {
  readonly pod: RenderedPod;
  /** The tables this cache works with: tiered sides flattened (flatten-tiers.ts). */
  readonly tables: PodTables;
  /**
   * Set when the pod has ordered cluster policy: the configurator's tables (kept to flatten again)
   * and the groups whose members the flattened tables were expanded from.
   */
  readonly flattened?: { readonly source: PodTables; readonly groups: ReadonlySet<string> };
}

const OPEN: readonly Rule[] = [{ action: 'permit', protocol: 'ANY', src: ANY_NET, dst: ANY_NET }];

function hostNet(ip: IpAddress): NetRef {
  return { kind: 'cidr', cidr: hostCidr(ip) };
}

const opposite = (side: Side): Side => (side === 'ingress' ? 'egress' : 'ingress');

/**
 * The target's side table (or allow-all) with the pair rules added, in canonical order. Pair
 * rules already hold the whole answer for their address (the intersection, then deny), so the
 * target's own rules for exactly that address are left out: at the same specificity, canonical
 * order would put a target permit for one protocol ahead of the pair's deny.
 */
export function combinedTable(target: KnownPod, pairs: readonly Rule[], side: Side): RuleTable {
  const remote = (rule: Rule): NetRef => (side === 'ingress' ? rule.src : rule.dst);
  const decided = new Set(pairs.map(remote).flatMap((net) => (net.kind === 'cidr' ? [net.cidr.text] : [])));
  const own = (target.tables[side]?.rules ?? OPEN).filter((rule) => {
    const net = remote(rule);
    return net.kind !== 'cidr' || !decided.has(net.cidr.text);
  });
  return canonicalTable([...own, ...pairs]);
}

/**
 * The rules CombineRules adds to the target's table for one other pod: nothing when the target's
 * own table already allows no more than the other pod's opposite table; otherwise, per address
 * pair, permits for the intersection and a deny for the rest, bound to the other pod's address.
 */
export function pairRules(target: KnownPod, other: KnownPod, side: Side, groups: GroupLookup): Rule[] {
  const otherTable = other.tables[opposite(side)];
  if (!otherTable) return [];
  const base = target.tables[side]?.rules ?? OPEN;
  const added: Rule[] = [];
  for (const otherIp of other.pod.ips) {
    for (const targetIp of target.pod.ips) {
      if (targetIp.family !== otherIp.family) continue;
      // The packet runs other → target on the ingress side, target → other on the egress side.
      const [src, dst] = side === 'ingress' ? [otherIp, targetIp] : [targetIp, otherIp];
      const allowedByOther = tablePorts(otherTable.rules, src, dst, groups);
      const allowedByTarget = tablePorts(base, src, dst, groups);
      if (isSubset(allowedByTarget, allowedByOther)) continue;
      const net = hostNet(otherIp);
      const bind = (rule: Omit<Rule, 'src' | 'dst'>): Rule =>
        side === 'ingress' ? { ...rule, src: net, dst: ANY_NET } : { ...rule, src: ANY_NET, dst: net };
      const allowed = intersectPorts(allowedByTarget, allowedByOther);
      for (const protocol of PROTOCOLS) {
        for (const [from, to] of allowed.ranges[protocol]) {
          const all = from === MIN_PORT && to === MAX_PORT;
          added.push(bind({ action: 'permit', protocol, ...(all ? {} : { dstPorts: [from, to] as const }) }));
        }
      }
      added.push(bind({ action: 'deny', protocol: 'ANY' }));
    }
  }
  return added;
}

/** BuildGlobalTable: local pods' opposite-side rules bound to their addresses, then permit all. */
export function buildGlobalTable(known: Iterable<KnownPod>, side: Side): RuleTable {
  const rules: Rule[] = [];
  for (const { pod, tables } of known) {
    const table = tables[opposite(side)];
    if (!table) continue;
    for (const ip of pod.ips) {
      const net = hostNet(ip);
      for (const rule of table.rules)
        rules.push(side === 'ingress' ? { ...rule, src: net } : { ...rule, dst: net });
    }
  }
  rules.push(...OPEN);
  return canonicalTable(rules);
}
