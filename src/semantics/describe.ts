/**
 * Plain-words descriptions of peers, ports and addresses, shared by verdict reasons and `explain`.
 */
import { formatIp } from '../net/ip.ts';
import { selectorText, type LabelSelector } from '../model/selector.ts';
import type { ClusterPeer, ClusterRule, Peer, PolicyPort, PolicyRule } from '../model/types.ts';
import type { Address } from './types.ts';
import { noteExplanation } from './explanation-meter.ts';

export function describeAddress(address: Address): string {
  noteExplanation();
  if (address.kind === 'endpoint') return address.endpoint.id;
  if (address.domain) return `${address.domain} (${formatIp(address.ip)})`;
  return address.node ? `${formatIp(address.ip)} (node ${address.node})` : formatIp(address.ip);
}

export function describePeer(peer: Peer, policyNamespace: string): string {
  noteExplanation();
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

export function describePort(
  port: Pick<PolicyPort, 'protocol' | 'endPort'> & { readonly port?: number | string },
): string {
  noteExplanation();
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
  noteExplanation();
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

/** E.g. `deny to namespaces team=x or 10.0.0.0/8 on TCP 80, named port http`. */
export function describeClusterRule(rule: ClusterRule, direction: 'ingress' | 'egress'): string {
  noteExplanation();
  const word = direction === 'ingress' ? 'from' : 'to';
  if (rule.failClosed) return `${rule.action} (a peer Palisade cannot read: fails closed)`;
  const peers = rule.peers.length > 0 ? rule.peers.map(describeClusterPeer).join(' or ') : 'nowhere';
  const ports = !rule.ports
    ? 'on any port'
    : rule.ports.length === 0
      ? 'on no TCP, UDP or SCTP port'
      : `on ${rule.ports.map((p) => (p.type === 'named' ? `named port ${p.protocol ? `${p.protocol} ` : ''}${p.name}` : describePort(p))).join(', ')}`;
  return `${rule.action} ${word} ${peers} ${ports}`;
}

/** Whether the blocks are every address of both families (a rule with no address condition). */
function isEverywhere(cidrs: readonly { readonly prefix: number }[]): boolean {
  return cidrs.length === 2 && cidrs.every((c) => c.prefix === 0);
}

export function describeClusterPeer(peer: ClusterPeer): string {
  noteExplanation();
  switch (peer.type) {
    case 'pods': {
      const ns = peer.namespaces.selector
        ? peer.namespaces.selector.key === ''
          ? 'all namespaces'
          : (oneNamespace(peer.namespaces.selector) ?? `namespaces ${selectorText(peer.namespaces.selector)}`)
        : peer.namespaces.sameLabels
          ? `namespaces sharing ${peer.namespaces.sameLabels.join(', ')} with the subject's`
          : `namespaces differing in ${(peer.namespaces.notSameLabels ?? []).join(', ')} from the subject's`;
      return peer.podSelector ? `pods ${selectorText(peer.podSelector)} in ${ns}` : ns;
    }
    case 'nodes': {
      const which = peer.only === 'own' ? "the pod's own node" : peer.only === 'others' ? 'other nodes' : '';
      if (which) return peer.selector.key === '' ? which : `${which} ${selectorText(peer.selector)}`;
      return peer.selector.key === '' ? 'all nodes' : `nodes ${selectorText(peer.selector)}`;
    }
    case 'networks':
      return isEverywhere(peer.cidrs) ? 'anywhere' : peer.cidrs.map((c) => c.text).join(', ');
    case 'outside':
      return isEverywhere(peer.cidrs)
        ? 'outside the cluster'
        : `${peer.cidrs.map((c) => c.text).join(', ')} outside the cluster`;
    case 'domainNames':
      return peer.names.join(', ');
  }
}

/** `namespace shop` for a selector of exactly one namespace by name (Calico's and Cilium's own namespace). */
function oneNamespace(selector: LabelSelector): string | undefined {
  const [only, ...rest] = selector.requirements;
  if (!only || rest.length > 0 || only.key !== 'kubernetes.io/metadata.name' || only.operator !== 'In')
    return undefined;
  return only.values.length === 1 ? `namespace ${only.values[0]}` : undefined;
}
