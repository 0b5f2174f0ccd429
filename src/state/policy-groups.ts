/**
 * What a policy rule's peers stand for as nets: any address, CIDR prefixes (an ipBlock with its
 * `except` subtracted), or address groups. Egress rules with named ports need groups
 * partitioned by the number the name resolves to on each destination pod, so the peer and the
 * port entry together decide the group. The configurator and the store both use this one
 * expansion, so the groups a policy holds are exactly the groups its tables reference.
 */
import { parseCidr, type Cidr } from '../net/ip.ts';
import { subtractCidrs } from '../net/subtract.ts';
import type { NetworkPolicy, Peer, PolicyPort, PolicyRule } from '../model/types.ts';
import { groupKey } from './group-key.ts';
import type { GroupSpec } from './types.ts';

export type PeerNet =
  | { readonly kind: 'any' }
  | { readonly kind: 'cidr'; readonly cidr: Cidr }
  | { readonly kind: 'group'; readonly spec: GroupSpec };

const ANYWHERE: readonly Cidr[] = ['0.0.0.0/0', '::/0'].map((text) => {
  const parsed = parseCidr(text);
  if (!parsed.ok) throw new Error(`bad constant ${text}`);
  return parsed.value;
});

/** The nets a rule's peers stand for, for one of its port entries (or none: all ports). */
export function ruleNets(
  policy: NetworkPolicy,
  direction: 'ingress' | 'egress',
  rule: PolicyRule,
  port: PolicyPort | undefined,
): PeerNet[] {
  const namedPort =
    direction === 'egress' && typeof port?.port === 'string'
      ? { name: port.port, protocol: port.protocol }
      : undefined;
  if (rule.peers === undefined || rule.peers.length === 0) {
    return namedPort
      ? [{ kind: 'group', spec: { ipBlock: { cidr: ANYWHERE }, namedPort } }]
      : [{ kind: 'any' }];
  }
  return rule.peers.flatMap((peer) => peerNets(policy, peer, namedPort));
}

function peerNets(policy: NetworkPolicy, peer: Peer, namedPort: GroupSpec['namedPort']): PeerNet[] {
  if (peer.type === 'ipBlock') {
    const prefixes = subtractCidrs(peer.cidr, peer.except);
    if (!namedPort) return prefixes.map((cidr) => ({ kind: 'cidr', cidr }));
    return prefixes.length ? [{ kind: 'group', spec: { ipBlock: { cidr: prefixes }, namedPort } }] : [];
  }
  const spec: GroupSpec = {
    ...(peer.namespaceSelector
      ? { namespaceSelector: peer.namespaceSelector }
      : { namespace: policy.namespace }),
    ...(peer.podSelector && peer.podSelector.key !== '' ? { podSelector: peer.podSelector } : {}),
    ...(namedPort ? { namedPort } : {}),
  };
  return [{ kind: 'group', spec }];
}

/** The port entries a rule expands over: each entry, or `undefined` for "all ports". */
export function rulePorts(rule: PolicyRule): (PolicyPort | undefined)[] {
  return rule.ports === undefined || rule.ports.length === 0 ? [undefined] : [...rule.ports];
}

/** Every group a policy's tables will reference, de-duplicated. */
export function policyGroupSpecs(policy: NetworkPolicy): GroupSpec[] {
  const specs = new Map<string, GroupSpec>();
  const visit = (direction: 'ingress' | 'egress', rules: readonly PolicyRule[], active: boolean): void => {
    if (!active) return;
    for (const rule of rules) {
      for (const port of rulePorts(rule)) {
        for (const net of ruleNets(policy, direction, rule, port))
          if (net.kind === 'group') specs.set(groupKey(net.spec), net.spec);
      }
    }
  };
  visit('ingress', policy.ingress, policy.affectsIngress);
  visit('egress', policy.egress, policy.affectsEgress);
  return [...specs.values()];
}
