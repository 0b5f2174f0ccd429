/**
 * Plain-words descriptions of peers, ports and addresses, shared by verdict reasons and `explain`.
 */
import { formatIp } from '../net/ip.ts';
import { selectorText } from '../model/selector.ts';
import type { Peer, PolicyPort, PolicyRule } from '../model/types.ts';
import type { Address } from './types.ts';

export function describeAddress(address: Address): string {
  if (address.kind === 'endpoint') return address.endpoint.id;
  if (address.domain) return `${address.domain} (${formatIp(address.ip)})`;
  return address.node ? `${formatIp(address.ip)} (node ${address.node})` : formatIp(address.ip);
}

export function describePeer(peer: Peer, policyNamespace: string): string {
  if (peer.type === 'ipBlock') {
    const except = peer.except.length > 0 ? ` except ${peer.except.map((c) => c.text).join(', ')}` : '';
    return `addresses in ${peer.cidr.text}${except}`;
  }
  const pods = peer.podSelector ? `pods ${selectorText(peer.podSelector)}` : 'all pods';
  const namespaces = peer.namespaceSelector
    ? peer.namespaceSelector.key === ''
      ? 'in all namespaces'
      : `in namespaces ${selectorText(peer.namespaceSelector)}`
    : `in namespace ${policyNamespace}`;
  return `${pods} ${namespaces}`;
}

export function describePort(port: PolicyPort): string {
  if (port.port === undefined) return `${port.protocol} (all ports)`;
  if (port.endPort !== undefined) return `${port.protocol} ${port.port}-${port.endPort}`;
  return `${port.protocol} ${port.port}`;
}

/** E.g. `from pods app=web in namespace shop on TCP 8080`. */
export function describeRule(
  rule: PolicyRule,
  direction: 'ingress' | 'egress',
  policyNamespace: string,
): string {
  const word = direction === 'ingress' ? 'from' : 'to';
  const peers =
    rule.peers === undefined || rule.peers.length === 0
      ? `${word} anywhere`
      : `${word} ${rule.peers.map((p) => describePeer(p, policyNamespace)).join(' or ')}`;
  const ports =
    rule.ports === undefined || rule.ports.length === 0
      ? 'on any port'
      : `on ${rule.ports.map(describePort).join(', ')}`;
  return `${peers} ${ports}`;
}
