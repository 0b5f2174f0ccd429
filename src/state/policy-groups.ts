/**
 * What a policy rule's peers stand for as nets: any address, CIDR prefixes (an ipBlock with its
 * `except` subtracted), or address groups. Egress rules with named ports need groups
 * partitioned by the number the name resolves to on each destination pod, so the peer and the
 * port entry together decide the group. The configurator and the store both use this one
 * expansion, so the groups a policy holds are exactly the groups its tables reference.
 */
import { parseCidr, type Cidr } from '../net/ip.ts';
import { subtractCidrsCached } from '../net/subtract.ts';
import { ANY_NET, type NetRef } from '../model/rule.ts';
import type { NetworkPolicy, Peer, PolicyPort, PolicyRule } from '../model/types.ts';
import { groupKey, sharedGroupKey } from './group-key.ts';
import { exactArray } from '../util/exact-array.ts';
import type { GroupSpec } from './types.ts';

export type PeerNet =
  | { readonly kind: 'any' }
  | { readonly kind: 'cidr'; readonly cidr: Cidr }
  /** `key`, where the net's maker has it: the spec's group key, made once with the spec. */
  | { readonly kind: 'group'; readonly spec: GroupSpec; readonly key?: string }
  /** Addresses of the block that no pod has (node addresses already left out). */
  | { readonly kind: 'outside'; readonly cidr: Cidr };

/** A group net's group key: the one its maker carried, else made from the spec. */
export function peerNetGroup(net: Extract<PeerNet, { kind: 'group' }>): string {
  return net.key ?? sharedGroupKey(net.spec);
}

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
  const nets: PeerNet[] = [];
  for (const peer of rule.peers) for (const net of peerNets(policy, peer, namedPort)) nets.push(net);
  return nets;
}

function peerNets(policy: NetworkPolicy, peer: Peer, namedPort: GroupSpec['namedPort']): PeerNet[] {
  if (peer.type === 'ipBlock') {
    const prefixes = subtractCidrsCached(peer.cidr, peer.except);
    if (!namedPort) return prefixes.map((cidr) => ({ kind: 'cidr', cidr }));
    return prefixes.length ? [{ kind: 'group', spec: { ipBlock: { cidr: [...prefixes] }, namedPort } }] : [];
  }
  return [{ kind: 'group', spec: selectorGroupSpec(policy, peer, namedPort) }];
}

/** The group a pod/namespace selector peer stands for (optionally one named port's members). */
export function selectorGroupSpec(
  policy: NetworkPolicy,
  peer: Extract<Peer, { type: 'selector' }>,
  namedPort?: GroupSpec['namedPort'],
): GroupSpec {
  // Built field by field (no spreads of temporary objects: this runs for every peer of a resync).
  const spec: { -readonly [K in keyof GroupSpec]: GroupSpec[K] } = peer.namespaceSelector
    ? { namespaceSelector: peer.namespaceSelector }
    : { namespace: policy.namespace };
  if (peer.podSelector && peer.podSelector.key !== '') spec.podSelector = peer.podSelector;
  if (namedPort) spec.namedPort = namedPort;
  return spec;
}

/** One (net, port entry) pair of a policy's expansion, with the group key computed once. */
export interface RuleTemplate {
  readonly net: NetRef;
  readonly port: PolicyPort | undefined;
}

/** A group a policy's templates reference: its key and spec. */
interface GroupUse {
  readonly key: string;
  readonly spec: GroupSpec;
}

interface PolicyTemplates {
  readonly ingress: readonly RuleTemplate[];
  readonly egress: readonly RuleTemplate[];
  /** Every group the templates reference, de-duplicated (a list: a policy uses a handful). */
  readonly groups: readonly GroupUse[];
}

/** Policies are immutable, so their expansion is computed once per object. */
const templates = new WeakMap<NetworkPolicy, PolicyTemplates>();

/** The expansion over peers × ports of a policy's active directions. */
export function policyTemplates(policy: NetworkPolicy): PolicyTemplates {
  const cached = templates.get(policy);
  if (cached) return cached;
  const groups: GroupUse[] = [];
  const result: PolicyTemplates = {
    ingress: policy.affectsIngress ? expand(policy, 'ingress', policy.ingress, groups) : NO_TEMPLATES,
    egress: policy.affectsEgress ? expand(policy, 'egress', policy.egress, groups) : NO_TEMPLATES,
    groups: exactArray(groups),
  };
  templates.set(policy, result);
  return result;
}

const NO_TEMPLATES: readonly RuleTemplate[] = [];

/** One direction's templates; the groups they reference are added to `groups` by key. */
function expand(
  policy: NetworkPolicy,
  direction: 'ingress' | 'egress',
  rules: readonly PolicyRule[],
  groups: GroupUse[],
): RuleTemplate[] {
  const result: RuleTemplate[] = [];
  for (const rule of rules) {
    // The nets depend on the port entry only for an egress named port: expand them once.
    let plain: NetRef[] | undefined;
    const ports = rule.ports === undefined || rule.ports.length === 0 ? NO_PORT_ENTRY : rule.ports;
    for (const port of ports) {
      const named = direction === 'egress' && typeof port?.port === 'string';
      const nets = named
        ? netRefs(ruleNets(policy, direction, rule, port), groups)
        : (plain ??= netRefs(ruleNets(policy, direction, rule, undefined), groups));
      for (const net of nets) result.push({ net, port });
    }
  }
  return exactArray(result);
}

/** "All ports": one port entry that is no entry. */
const NO_PORT_ENTRY: readonly (PolicyPort | undefined)[] = [undefined];

/** Peer nets as rule nets; each group is registered once, by its key. */
function netRefs(nets: readonly PeerNet[], groups: GroupUse[]): NetRef[] {
  const refs: NetRef[] = [];
  for (const net of nets) {
    if (net.kind !== 'group') {
      refs.push(net.kind === 'cidr' ? net : ANY_NET);
      continue;
    }
    const key = groupKey(net.spec);
    if (!groups.some((g) => g.key === key)) groups.push({ key, spec: net.spec });
    refs.push({ kind: 'group', group: key });
  }
  return refs;
}

/** Every group a policy's tables will reference, de-duplicated, by key. */
export function policyGroupSpecs(policy: NetworkPolicy): readonly GroupUse[] {
  return policyTemplates(policy).groups;
}
