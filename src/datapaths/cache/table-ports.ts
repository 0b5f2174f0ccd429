/**
 * Which ports a first-match table lets through between two fixed addresses, as a port set:
 * rules are walked in order, each protocol/port range is decided by the first rule covering it.
 */
import type { IpAddress } from '../../net/ip.ts';
import { PROTOCOLS, type Protocol } from '../../model/types.ts';
import {
  EMPTY_PORTS,
  intersectPorts,
  portSetOf,
  unionPorts,
  MIN_PORT,
  MAX_PORT,
  type PortSet,
} from '../../model/port-set.ts';
import type { Rule } from '../../model/rule.ts';
import { netMatches, type GroupLookup } from '../../configurator/index.ts';

export function tablePorts(
  rules: readonly Rule[],
  src: IpAddress,
  dst: IpAddress,
  groups: GroupLookup,
): PortSet {
  if (permitsThenDenyAll(rules)) return unionOfPermits(rules, src, dst, groups);
  let permitted = EMPTY_PORTS;
  let decided = EMPTY_PORTS;
  for (const rule of rules) {
    if (!netMatches(rule.src, src, groups) || !netMatches(rule.dst, dst, groups)) continue;
    const protocols: readonly Protocol[] = rule.protocol === 'ANY' ? PROTOCOLS : [rule.protocol];
    const [from, to] = rule.dstPorts ?? [MIN_PORT, MAX_PORT];
    const covered = portSetOf(protocols.map((protocol) => ({ protocol, from, to })));
    if (rule.action === 'permit') permitted = unionPorts(permitted, minus(covered, decided));
    decided = unionPorts(decided, covered);
  }
  return permitted;
}

/** Tables shaped like the configurator's: permit rules, then one deny of everything, last. */
const shapes = new WeakMap<readonly Rule[], boolean>();
function permitsThenDenyAll(rules: readonly Rule[]): boolean {
  let shape = shapes.get(rules);
  if (shape === undefined) {
    const last = rules[rules.length - 1];
    shape =
      last !== undefined &&
      last.action === 'deny' &&
      last.protocol === 'ANY' &&
      !last.dstPorts &&
      last.src.kind === 'any' &&
      last.dst.kind === 'any' &&
      rules.slice(0, -1).every((r) => r.action === 'permit');
    shapes.set(rules, shape);
  }
  return shape;
}

/** For such tables the permitted ports are simply the union of the matching permits. */
function unionOfPermits(
  rules: readonly Rule[],
  src: IpAddress,
  dst: IpAddress,
  groups: GroupLookup,
): PortSet {
  const entries: { protocol: Protocol; from: number; to: number }[] = [];
  for (const rule of rules) {
    if (rule.action !== 'permit') continue;
    if (!netMatches(rule.src, src, groups) || !netMatches(rule.dst, dst, groups)) continue;
    const [from, to] = rule.dstPorts ?? [MIN_PORT, MAX_PORT];
    if (rule.protocol === 'ANY') for (const protocol of PROTOCOLS) entries.push({ protocol, from, to });
    else entries.push({ protocol: rule.protocol, from, to });
  }
  return entries.length === 0 ? EMPTY_PORTS : portSetOf(entries);
}

/** a minus b, for port sets. */
function minus(a: PortSet, b: PortSet): PortSet {
  const entries: { protocol: Protocol; from: number; to: number }[] = [];
  for (const protocol of PROTOCOLS) {
    for (const [from, to] of a.ranges[protocol]) {
      let start = from;
      for (const [bFrom, bTo] of b.ranges[protocol]) {
        if (bTo < start || bFrom > to) continue;
        if (bFrom > start) entries.push({ protocol, from: start, to: bFrom - 1 });
        start = Math.max(start, bTo + 1);
      }
      if (start <= to) entries.push({ protocol, from: start, to });
    }
  }
  return portSetOf(entries);
}

/** True when every port of `a` is in `b`. */
export function isSubset(a: PortSet, b: PortSet): boolean {
  const inter = intersectPorts(a, b);
  return PROTOCOLS.every((p) => JSON.stringify(inter.ranges[p]) === JSON.stringify(a.ranges[p]));
}
