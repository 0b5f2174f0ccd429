/**
 * Which ports and protocols one endpoint may use to reach another: the same walk as the
 * evaluator, over port sets instead of one port. Per side, tier by tier: a tier's rules in order
 * carve the ports still undecided into allowed, denied and passed; what is left (plus what
 * passed) goes on — unless the tier holds the pod (a Calico tier's default deny), when only what
 * passed does. NetworkPolicy decides all of it for a pod it isolates (and in the default tier
 * with Calico's or Cilium's policies, its entries carve in Calico's order: default-tier.ts);
 * what nobody decided is allowed. Then egress ∩ ingress, for every common address family.
 */
import type { IpFamily } from '../net/ip.ts';
import { DEFAULT_TIER } from '../model/cluster-policy.ts';
import type {
  ClusterPolicy,
  ClusterRule,
  Endpoint,
  NetworkPolicy,
  PolicyPort,
  Semantics,
  Tier,
} from '../model/types.ts';
import { connectionFamilies } from './evaluate.ts';
import { isOwnNode, listMatchesAll, peerMatches, resolveNamedPort, type ClusterIndex } from './match.ts';
import { tierPlan } from './tier-plan.ts';
import { tierHolds } from './tiers.ts';
import {
  ciliumRules,
  defaultTierEntries,
  defaultTierIsolates,
  defaultTierMembers,
  type DefaultTierMembers,
} from './default-tier.ts';
import {
  ALL_PORTS,
  containsPorts,
  EMPTY_PORTS,
  intersectPorts,
  isAllPorts,
  isNoPorts,
  MAX_PORT,
  MIN_PORT,
  portSetOf,
  subtractPorts,
  unionPorts,
  type PortSet,
} from '../model/port-set.ts';
import { clusterRulePorts, matchingPeer, selectingClusterPolicies } from './cluster-match.ts';
import { networkPolicyGate, subjectGate } from './side-gate.ts';
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

/** One side of a connection for one address family: the egress of `src` or the ingress of `dst`. */
export function sidePorts(
  index: ClusterIndex,
  src: Address,
  dst: Address,
  direction: 'egress' | 'ingress',
  family: IpFamily | undefined,
  options: EvaluateOptions,
): PortSet {
  const subject = direction === 'egress' ? src : dst;
  const other = direction === 'egress' ? dst : src;
  const gate = subjectGate(subject);
  if (gate.open) return ALL_PORTS;
  const endpoint = gate.endpoint;
  const semantics: Semantics = options.semantics ?? 'v1';
  let undecided = ALL_PORTS;
  let allowed = EMPTY_PORTS;
  for (const tier of tierPlan(index.cluster)) {
    if (isNoPorts(undecided)) return allowed;
    if (tier.name !== DEFAULT_TIER) {
      // No policy of the tier selects the endpoint: every port stays undecided (the common case).
      const carved = carveTier(index, tier.name, endpoint, direction, other, dst, family, undecided);
      if (!carved) continue;
      allowed = unionPorts(allowed, carved.allowed);
      undecided = tierHolds(tier, carved.policies, direction)
        ? carved.passed
        : unionPorts(carved.remaining, carved.passed);
      continue;
    }
    const members =
      semantics === 'v1' ? defaultTierMembers(index, endpoint, direction, semantics) : undefined;
    if (members) {
      const carved = carveDefaultTier(
        index,
        members,
        endpoint,
        direction,
        other,
        dst,
        family,
        options,
        undecided,
      );
      allowed = unionPorts(allowed, carved.allowed);
      undecided = carved.onward;
      continue;
    }
    const np = networkPolicyGate(index, endpoint, other, direction, options);
    if (np.open && np.final) return unionPorts(allowed, undecided);
    if (!np.open) {
      const npAllowed = networkPolicyPorts(index, np.policies, direction, other, dst, family, options);
      return unionPorts(allowed, intersectPorts(npAllowed, undecided));
    }
  }
  // What no tier decided ends in the default: allowed.
  return unionPorts(allowed, undecided);
}

/**
 * The default tier with Calico's or Cilium's policies in it: its entries carve the undecided
 * ports in Calico's order (default-tier.ts); `onward` is what goes to the next tier — what passed,
 * and what no rule matched unless the tier holds the pod.
 */
function carveDefaultTier(
  index: ClusterIndex,
  members: DefaultTierMembers,
  endpoint: Endpoint,
  direction: 'egress' | 'ingress',
  other: Address,
  dst: Address,
  family: IpFamily | undefined,
  options: EvaluateOptions,
  undecided: PortSet,
): { allowed: PortSet; onward: PortSet } {
  let remaining = undecided;
  let allowed = EMPTY_PORTS;
  let passed = EMPTY_PORTS;
  const isolated = defaultTierIsolates(members, direction);
  const apply = (rule: ClusterRule): void => {
    if (isNoPorts(remaining)) return;
    if (rule.failClosed) {
      if (rule.action !== 'allow') remaining = EMPTY_PORTS;
      return;
    }
    if (matchingPeer(index, rule, endpoint, other, family) < 0) return;
    const matched = intersectPorts(remaining, clusterRulePorts(rule, dst));
    if (rule.action === 'allow') allowed = unionPorts(allowed, matched);
    else if (rule.action === 'pass') passed = unionPorts(passed, matched);
    remaining = subtractPorts(remaining, matched);
  };
  for (const entry of defaultTierEntries(members)) {
    if (entry.kind === 'calico') for (const rule of entry.policy[direction]) apply(rule);
    else if (entry.kind === 'networkPolicies') {
      const ports = intersectPorts(
        remaining,
        networkPolicyPorts(index, entry.policies, direction, other, dst, family, options),
      );
      allowed = unionPorts(allowed, ports);
      remaining = subtractPorts(remaining, ports);
    } else {
      for (const { rule } of ciliumRules(members, direction, 'deny')) apply(rule);
      if (isolated && (options.allowNodeLocal ?? true) && isOwnNode(index, endpoint, other)) {
        allowed = unionPorts(allowed, remaining);
        remaining = EMPTY_PORTS;
      }
      for (const { rule } of ciliumRules(members, direction, 'allow')) apply(rule);
    }
  }
  return { allowed, onward: isolated ? passed : unionPorts(passed, remaining) };
}

interface Carved {
  readonly allowed: PortSet;
  readonly passed: PortSet;
  /** Ports no rule of the tier matched. */
  readonly remaining: PortSet;
  /** The tier's policies selecting the endpoint. */
  readonly policies: readonly ClusterPolicy[];
}

/**
 * Applies one tier's rules in precedence order to the ports still undecided; undefined when no
 * policy of the tier selects the endpoint (every port stays undecided).
 */
function carveTier(
  index: ClusterIndex,
  tier: Tier,
  endpoint: Endpoint,
  direction: 'egress' | 'ingress',
  other: Address,
  dst: Address,
  family: IpFamily | undefined,
  undecided: PortSet,
): Carved | undefined {
  const policies = selectingClusterPolicies(index, endpoint, direction, tier);
  if (policies.length === 0) return undefined;
  let remaining = undecided;
  let allowed = EMPTY_PORTS;
  let passed = EMPTY_PORTS;
  for (const policy of policies) {
    for (const rule of policy[direction]) {
      if (isNoPorts(remaining)) return { allowed, passed, remaining, policies };
      if (rule.failClosed) {
        if (rule.action !== 'allow') remaining = EMPTY_PORTS;
        continue;
      }
      if (matchingPeer(index, rule, endpoint, other, family) < 0) continue;
      const matched = intersectPorts(remaining, clusterRulePorts(rule, dst));
      if (rule.action === 'allow') allowed = unionPorts(allowed, matched);
      else if (rule.action === 'pass') passed = unionPorts(passed, matched);
      remaining = subtractPorts(remaining, matched);
    }
  }
  return { allowed, passed, remaining, policies };
}

/** The union of the ports every matching NetworkPolicy rule allows. */
function networkPolicyPorts(
  index: ClusterIndex,
  policies: readonly NetworkPolicy[],
  direction: 'egress' | 'ingress',
  other: Address,
  dst: Address,
  family: IpFamily | undefined,
  options: EvaluateOptions,
): PortSet {
  const semantics: Semantics = options.semantics ?? 'v1';
  let result = EMPTY_PORTS;
  for (const policy of policies) {
    for (const rule of direction === 'ingress' ? policy.ingress : policy.egress) {
      // Ports first: a rule whose ports add nothing (none resolve, or all are in already)
      // needs no peer matching, which is the costly part (selectors, ipBlocks with excepts).
      const ports = listMatchesAll(rule.ports, semantics) ? ALL_PORTS : portsOf(index, rule.ports ?? [], dst);
      if (containsPorts(result, ports)) continue;
      const peerOk =
        listMatchesAll(rule.peers, semantics) ||
        (rule.peers ?? []).some((peer) => peerMatches(index, peer, policy.namespace, other, family));
      if (!peerOk) continue;
      result = unionPorts(result, ports);
      if (isAllPorts(result)) return ALL_PORTS;
    }
  }
  return result;
}

function portsOf(index: ClusterIndex, ports: readonly PolicyPort[], dst: Address): PortSet {
  const known = index.numericPorts.get(ports);
  if (known) return known;
  const entries: { protocol: PolicyPort['protocol']; from: number; to: number }[] = [];
  let named = false;
  for (const port of ports) {
    if (port.port === undefined) entries.push({ protocol: port.protocol, from: MIN_PORT, to: MAX_PORT });
    else if (typeof port.port === 'number')
      entries.push({ protocol: port.protocol, from: port.port, to: port.endPort ?? port.port });
    else {
      named = true;
      const resolved = resolveNamedPort(dst, port.port, port.protocol);
      if (resolved !== undefined) entries.push({ protocol: port.protocol, from: resolved, to: resolved });
    }
  }
  const set = portSetOf(entries);
  if (!named) index.numericPorts.set(ports, set);
  return set;
}
