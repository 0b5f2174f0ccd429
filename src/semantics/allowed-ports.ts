/**
 * Which ports and protocols one endpoint may use to reach another: the same walk as the
 * evaluator, over port sets instead of one port. Per side: the Admin tier's rules in order carve
 * the ports still undecided into allowed, denied and passed; what is left (plus what passed) goes
 * to NetworkPolicy, which decides all of it for an isolated pod; otherwise the Baseline tier
 * carves again, and what nobody decided is allowed. Then egress ∩ ingress, for every common
 * address family.
 */
import type { IpFamily } from '../net/ip.ts';
import type { Endpoint, NetworkPolicy, PolicyPort, Semantics, Tier } from '../model/types.ts';
import { connectionFamilies } from './evaluate.ts';
import { listMatchesAll, peerMatches, resolveNamedPort, type ClusterIndex } from './match.ts';
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
  const admin = carveTier(index, 'Admin', endpoint, direction, other, dst, family, ALL_PORTS);
  // No Admin policy selects the endpoint: every port goes on, undecided (the common case).
  const undecided = admin ? unionPorts(admin.remaining, admin.passed) : ALL_PORTS;
  const adminAllowed = admin?.allowed ?? EMPTY_PORTS;
  const np = networkPolicyGate(index, endpoint, other, direction, options);
  if (np.open && np.final) return unionPorts(adminAllowed, undecided);
  if (!np.open) {
    const npAllowed = networkPolicyPorts(index, np.policies, direction, other, dst, family, options);
    return unionPorts(adminAllowed, intersectPorts(npAllowed, undecided));
  }
  const baseline = carveTier(index, 'Baseline', endpoint, direction, other, dst, family, undecided);
  if (!baseline) return unionPorts(adminAllowed, undecided);
  // Passing the Baseline tier, or matching nothing there, ends in the default: allowed.
  return unionPorts(
    adminAllowed,
    unionPorts(baseline.allowed, unionPorts(baseline.remaining, baseline.passed)),
  );
}

interface Carved {
  readonly allowed: PortSet;
  readonly passed: PortSet;
  /** Ports no rule of the tier matched. */
  readonly remaining: PortSet;
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
      if (isNoPorts(remaining)) return { allowed, passed, remaining };
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
  return { allowed, passed, remaining };
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
