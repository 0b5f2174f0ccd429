/**
 * Which ports and protocols one endpoint may use to reach another: the same rules as the
 * evaluator, computed as port sets (union over matching rules per side, then the intersection of
 * egress and ingress, and of every common address family).
 */
import type { IpFamily } from '../net/ip.ts';
import type { PolicyPort, Semantics } from '../model/types.ts';
import { connectionFamilies } from './evaluate.ts';
import { listMatchesAll, peerMatches, resolveNamedPort, type ClusterIndex } from './match.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  intersectPorts,
  MAX_PORT,
  MIN_PORT,
  portSetOf,
  unionPorts,
  type PortSet,
} from '../model/port-set.ts';
import { gateSide } from './side-gate.ts';
import type { Address, EvaluateOptions } from './types.ts';

export function allowedPorts(
  index: ClusterIndex,
  src: Address,
  dst: Address,
  options: EvaluateOptions = {},
): PortSet {
  const { families } = connectionFamilies(src, dst);
  if (families.length === 0) return EMPTY_PORTS;
  let result = ALL_PORTS;
  for (const family of families) {
    result = intersectPorts(result, sidePorts(index, src, dst, 'egress', family, options));
    result = intersectPorts(result, sidePorts(index, src, dst, 'ingress', family, options));
  }
  return result;
}

function sidePorts(
  index: ClusterIndex,
  src: Address,
  dst: Address,
  direction: 'egress' | 'ingress',
  family: IpFamily | undefined,
  options: EvaluateOptions,
): PortSet {
  const semantics: Semantics = options.semantics ?? 'v1';
  const subject = direction === 'egress' ? src : dst;
  const other = direction === 'egress' ? dst : src;
  const gate = gateSide(index, subject, other, direction, options);
  if (gate.open) return ALL_PORTS;
  let result = EMPTY_PORTS;
  for (const policy of gate.policies) {
    for (const rule of direction === 'ingress' ? policy.ingress : policy.egress) {
      const peerOk =
        listMatchesAll(rule.peers, semantics) ||
        (rule.peers ?? []).some((peer) => peerMatches(index, peer, policy.namespace, other, family));
      if (!peerOk) continue;
      result = unionPorts(
        result,
        listMatchesAll(rule.ports, semantics) ? ALL_PORTS : portsOf(rule.ports ?? [], dst),
      );
    }
  }
  return result;
}

function portsOf(ports: readonly PolicyPort[], dst: Address): PortSet {
  const entries = ports.flatMap((port) => {
    if (port.port === undefined) return [{ protocol: port.protocol, from: MIN_PORT, to: MAX_PORT }];
    if (typeof port.port === 'number')
      return [{ protocol: port.protocol, from: port.port, to: port.endPort ?? port.port }];
    const resolved = resolveNamedPort(dst, port.port, port.protocol);
    return resolved === undefined ? [] : [{ protocol: port.protocol, from: resolved, to: resolved }];
  });
  return portSetOf(entries);
}
