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
  EMPTY_PORTS,
  intersectPorts,
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

function sidePorts(
  index: ClusterIndex,
  src: Address,
  dst: Address,
  direction: 'egress' | 'ingress',
  family: IpFamily | undefined,
  options: EvaluateOptions,
): PortSet {
  const subject = direction === 'egress' ? src : dst;
  const other = direction === 'egress' ? dst : src;
  const gate = subjectGate(subject, direction);
  if (gate.open) return ALL_PORTS;
  const endpoint = gate.endpoint;
  const admin = carveTier(index, 'Admin', endpoint, direction, other, dst, family, ALL_PORTS);
  const undecided = unionPorts(admin.remaining, admin.passed);
  const np = networkPolicyGate(index, endpoint, other, direction, options);
  if (np.open && np.final) return unionPorts(admin.allowed, undecided);
  if (!np.open) {
    const npAllowed = networkPolicyPorts(index, np.policies, direction, other, dst, family, options);
    return unionPorts(admin.allowed, intersectPorts(npAllowed, undecided));
  }
  const baseline = carveTier(index, 'Baseline', endpoint, direction, other, dst, family, undecided);
  // Passing the Baseline tier, or matching nothing there, ends in the default: allowed.
  return unionPorts(
    admin.allowed,
    unionPorts(baseline.allowed, unionPorts(baseline.remaining, baseline.passed)),
  );
}

interface Carved {
  readonly allowed: PortSet;
  readonly passed: PortSet;
  /** Ports no rule of the tier matched. */
  readonly remaining: PortSet;
}

/** Applies one tier's rules in precedence order to the ports still undecided. */
function carveTier(
  index: ClusterIndex,
  tier: Tier,
  endpoint: Endpoint,
  direction: 'egress' | 'ingress',
  other: Address,
  dst: Address,
  family: IpFamily | undefined,
  undecided: PortSet,
): Carved {
  let remaining = undecided;
  let allowed = EMPTY_PORTS;
  let passed = EMPTY_PORTS;
  for (const policy of selectingClusterPolicies(index, endpoint, direction, tier)) {
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
