/**
 * NetworkPolicy's rules against one connection: whether a rule allows it (`ruleMatch`, the
 * matching peer and port), and a policy's rules with why each that did not match missed
 * (`checkPolicy`) — shared by the evaluator's NetworkPolicy tier and by the default tier when
 * Calico's or Cilium's policies sit there too.
 */
import type { IpFamily } from '../net/ip.ts';
import type { NetworkPolicy, PolicyRule, Semantics } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { describeAddress, describeRule } from './describe.ts';
import { listMatchesAll, peerMatches, portMatches, type ClusterIndex } from './match.ts';
import type { Address, Connection, RuleMatch, RuleMiss } from './types.ts';

/** Records the policy's matching rules in `matches` and, for each other rule, why not in `misses`. */
export function checkPolicy(
  index: ClusterIndex,
  policy: NetworkPolicy,
  connection: Connection,
  direction: 'egress' | 'ingress',
  other: Address,
  family: IpFamily | undefined,
  semantics: Semantics,
  matches: RuleMatch[],
  misses: RuleMiss[],
): void {
  const name = policyKey(policy);
  const rules = direction === 'ingress' ? policy.ingress : policy.egress;
  if (rules.length === 0) {
    misses.push({ policy: name, rule: -1, reason: `no ${direction} rules; it only isolates` });
    return;
  }
  for (const rule of rules) {
    const match = ruleMatch(index, rule, policy.namespace, connection, other, family, semantics);
    if (match) {
      matches.push({
        policy: name,
        rule: rule.index,
        ...(match.peer >= 0 ? { peer: match.peer } : {}),
        ...(match.port >= 0 ? { port: match.port } : {}),
      });
      continue;
    }
    const described = describeRule(rule, direction, policy.namespace);
    const peerOk =
      listMatchesAll(rule.peers, semantics) ||
      (rule.peers ?? []).some((peer) => peerMatches(index, peer, policy.namespace, other, family));
    const reason = !peerOk
      ? `${describeAddress(other)} does not match (rule allows ${described})`
      : `${connection.protocol}/${connection.port} does not match (rule allows ${described})`;
    misses.push({ policy: name, rule: rule.index, reason });
  }
}

/** Whether any of a policy's rules for the direction allows the connection. */
export function policyAllows(
  index: ClusterIndex,
  policy: NetworkPolicy,
  connection: Connection,
  direction: 'egress' | 'ingress',
  other: Address,
  family: IpFamily | undefined,
  semantics: Semantics,
): boolean {
  return (direction === 'ingress' ? policy.ingress : policy.egress).some(
    (rule) => ruleMatch(index, rule, policy.namespace, connection, other, family, semantics) !== undefined,
  );
}

/**
 * Whether a NetworkPolicy rule allows the connection: the index of the matching peer and port
 * entry (-1 where the list matches everything), or undefined. Ports are checked first: they are
 * cheaper than peers (an ipBlock with a thousand excepts, a selector of many requirements).
 */
function ruleMatch(
  index: ClusterIndex,
  rule: PolicyRule,
  policyNamespace: string,
  connection: Connection,
  other: Address,
  family: IpFamily | undefined,
  semantics: Semantics,
): { peer: number; port: number } | undefined {
  const allPorts = listMatchesAll(rule.ports, semantics);
  const port = allPorts
    ? -1
    : (rule.ports ?? []).findIndex((p) =>
        portMatches(p, connection.dst, connection.protocol, connection.port),
      );
  if (!allPorts && port === -1) return undefined;
  const allPeers = listMatchesAll(rule.peers, semantics);
  const peer = allPeers
    ? -1
    : (rule.peers ?? []).findIndex((p) => peerMatches(index, p, policyNamespace, other, family));
  if (!allPeers && peer === -1) return undefined;
  return { peer, port };
}
