/**
 * The reference evaluator: the semantics oracle every compiled path is tested against. It walks
 * the API's rules literally — is the side isolated, which policies select it, does any rule's
 * peer and port match — and records why. It favours being obviously right over being fast.
 */
import type { IpFamily } from '../net/ip.ts';
import type { NetworkPolicy, PolicyRule, Semantics } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { describeAddress, describeRule } from './describe.ts';
import { noteExplanation } from './explanation-meter.ts';
import { listMatchesAll, peerMatches, portMatches, type ClusterIndex } from './match.ts';
import { gateReason, networkPolicyGate, subjectGate, type OpenGate } from './side-gate.ts';
import { tierOutcome, walkTier } from './tiers.ts';
import type {
  Address,
  Connection,
  EvaluateOptions,
  RuleMatch,
  RuleMiss,
  SideVerdict,
  TierStep,
  Verdict,
} from './types.ts';

export function evaluate(
  index: ClusterIndex,
  connection: Connection,
  options: EvaluateOptions = {},
): Verdict {
  noteExplanation();
  const shared = connectionFamilies(connection.src, connection.dst);
  const wanted = connection.family;
  const families =
    wanted === undefined ? shared.families : shared.families.filter((f) => f === wanted || f === undefined);
  const note =
    families.length === 0 && wanted !== undefined
      ? `no IPv${wanted} address on both sides`
      : shared.families.length === 0
        ? `${describeAddress(connection.src)} and ${describeAddress(connection.dst)} share no address family`
        : undefined;
  const [firstFamily, ...moreFamilies] = families;
  if (families.length === 0) {
    const verdict = evaluateFamily(index, connection, undefined, options);
    return { ...verdict, allowed: false, notes: [...verdict.notes, note ?? 'no common address family'] };
  }
  const first = evaluateFamily(index, connection, firstFamily, options);
  const verdicts = [
    first,
    ...moreFamilies.map((family) => evaluateFamily(index, connection, family, options)),
  ];
  const primary = verdicts.find((v) => !v.allowed) ?? first;
  const others = verdicts.filter((v) => v !== primary);
  const differ = others.filter((v) => v.allowed !== primary.allowed);
  const notes = differ.length
    ? [
        `dual-stack: ${differ.map((o) => `IPv${o.family} is ${o.allowed ? 'allowed' : 'denied'}`).join(', ')}, IPv${primary.family} is ${primary.allowed ? 'allowed' : 'denied'}; the pair counts as allowed only when every family is`,
      ]
    : [];
  return { ...primary, otherFamilies: others, notes: [...primary.notes, ...notes] };
}

/**
 * The verdict alone — what `evaluate(…).allowed` says, by the same gates and matching rules —
 * without the explanation: no walk, no reasons, no list of the rules that missed, and each side
 * stops at its first matching rule. For callers that only count or print allowed/denied (the
 * matrix asks this for every pair of classes).
 */
export function isAllowed(
  index: ClusterIndex,
  connection: Connection,
  options: EvaluateOptions = {},
): boolean {
  const wanted = connection.family;
  const shared = connectionFamilies(connection.src, connection.dst).families;
  const families = wanted === undefined ? shared : shared.filter((f) => f === wanted || f === undefined);
  if (families.length === 0) return false;
  for (const family of families) {
    if (!sideAllowed(index, connection, 'egress', family, options)) return false;
    if (!sideAllowed(index, connection, 'ingress', family, options)) return false;
  }
  return true;
}

/** One side's `allowed`, in the order `evaluateSide` decides it. */
function sideAllowed(
  index: ClusterIndex,
  connection: Connection,
  direction: 'egress' | 'ingress',
  family: IpFamily | undefined,
  options: EvaluateOptions,
): boolean {
  const other = direction === 'egress' ? connection.dst : connection.src;
  const gate = subjectGate(direction === 'egress' ? connection.src : connection.dst);
  if (gate.open) return true;
  const { endpoint } = gate;
  const admin = tierOutcome(index, 'Admin', endpoint, direction, connection, family);
  if (admin === 'allow' || admin === 'deny') return admin === 'allow';
  const np = networkPolicyGate(index, endpoint, other, direction, options);
  if (!np.open) {
    const semantics: Semantics = options.semantics ?? 'v1';
    return np.policies.some((policy) =>
      (direction === 'ingress' ? policy.ingress : policy.egress).some(
        (rule) =>
          ruleMatch(index, rule, policy.namespace, connection, other, family, semantics) !== undefined,
      ),
    );
  }
  if (np.final) return true;
  return tierOutcome(index, 'Baseline', endpoint, direction, connection, family) !== 'deny';
}

/**
 * Which address families a connection can use. Endpoints without addresses (workload templates)
 * take the other side's families; two addressless endpoints give `[undefined]`, two endpoints
 * sharing no family `[]` (`evaluate` says so in a note; the matrix only needs the families).
 */
export function connectionFamilies(src: Address, dst: Address): { families: (IpFamily | undefined)[] } {
  const familiesOf = (a: Address): IpFamily[] =>
    a.kind === 'ip' ? [a.ip.family] : [...new Set(a.endpoint.ips.map((ip) => ip.family))].sort();
  const s = familiesOf(src);
  const d = familiesOf(dst);
  if (s.length === 0 && d.length === 0) return { families: [undefined] };
  if (s.length === 0) return { families: d };
  if (d.length === 0) return { families: s };
  return { families: s.filter((f) => d.includes(f)) };
}

function evaluateFamily(
  index: ClusterIndex,
  connection: Connection,
  family: IpFamily | undefined,
  options: EvaluateOptions,
): Verdict {
  const egress = evaluateSide(index, connection, 'egress', family, options);
  const ingress = evaluateSide(index, connection, 'ingress', family, options);
  return {
    allowed: egress.allowed && ingress.allowed,
    ...(family !== undefined ? { family } : {}),
    egress,
    ingress,
    otherFamilies: [],
    notes: [],
  };
}

function evaluateSide(
  index: ClusterIndex,
  connection: Connection,
  direction: 'egress' | 'ingress',
  family: IpFamily | undefined,
  options: EvaluateOptions,
): SideVerdict {
  const semantics: Semantics = options.semantics ?? 'v1';
  const subject = direction === 'egress' ? connection.src : connection.dst;
  const other = direction === 'egress' ? connection.dst : connection.src;
  const gate = subjectGate(subject);
  if (gate.open) return openSide(direction, gate, subject, []);
  const { endpoint } = gate;
  const walk: TierStep[] = [];
  const admin = walkTier(index, 'Admin', endpoint, direction, connection, family);
  walk.push(admin);
  if (admin.outcome === 'allow' || admin.outcome === 'deny') {
    return tierDecided(direction, endpoint.id, admin, walk, other, connection);
  }
  const np = networkPolicyGate(index, endpoint, other, direction, options);
  if (!np.open) {
    const matches: RuleMatch[] = [];
    const misses: RuleMiss[] = [];
    for (const policy of np.policies)
      checkPolicy(index, policy, connection, direction, other, family, semantics, matches, misses);
    const names = np.policies.map(policyKey);
    const allowed = matches.length > 0;
    const first = matches[0];
    walk.push({
      tier: 'NetworkPolicy',
      outcome: allowed ? 'allow' : 'deny',
      ...(first ? { policy: first.policy, rule: first.rule } : {}),
      policies: names,
    });
    const isolatedBy =
      names.length > 0
        ? `isolated for ${direction} by ${names.join(', ')}`
        : `isolated by its namespace's DefaultDeny`;
    return {
      direction,
      endpoint: endpoint.id,
      status: allowed ? 'allowed-by-rule' : 'no-rule-matched',
      allowed,
      isolated: true,
      policies: names,
      matches,
      misses,
      walk,
      reason: first
        ? `allowed by ${first.policy} ${direction}[${first.rule}]`
        : `${endpoint.id} is ${isolatedBy}, and no rule allows ${describeAddress(other)} on ${connection.protocol}/${connection.port}`,
    };
  }
  if (np.final) {
    walk.push({ tier: 'NetworkPolicy', outcome: 'allow', policies: [] });
    return openSide(direction, np, subject, walk);
  }
  walk.push({ tier: 'NetworkPolicy', outcome: 'not-isolated', policies: [] });
  const baseline = walkTier(index, 'Baseline', endpoint, direction, connection, family);
  walk.push(baseline);
  if (baseline.outcome === 'allow' || baseline.outcome === 'deny') {
    return tierDecided(direction, endpoint.id, baseline, walk, other, connection);
  }
  walk.push({ tier: 'Default', outcome: 'allow', policies: [] });
  return openSide(direction, np, subject, walk);
}

/** A side no rule decided: open by status (outside, host network, not isolated…), allowed. */
function openSide(
  direction: 'egress' | 'ingress',
  gate: OpenGate,
  subject: Address,
  walk: readonly TierStep[],
): SideVerdict {
  return {
    direction,
    ...(gate.endpoint ? { endpoint: gate.endpoint.id } : {}),
    status: gate.status,
    allowed: true,
    isolated: false,
    policies: [],
    matches: [],
    misses: [],
    walk,
    reason: gateReason(gate, subject, direction),
  };
}

/** A side decided by an Admin or Baseline rule. */
function tierDecided(
  direction: 'egress' | 'ingress',
  endpoint: string,
  step: TierStep,
  walk: readonly TierStep[],
  other: Address,
  connection: Connection,
): SideVerdict {
  const allowed = step.outcome === 'allow';
  const tier = step.tier === 'Admin' ? 'admin' : 'baseline';
  const rule = `${step.policy} ${direction}[${step.rule}]${step.ruleName ? ` "${step.ruleName}"` : ''}`;
  return {
    direction,
    endpoint,
    status: `${allowed ? 'allowed' : 'denied'}-by-${tier}`,
    allowed,
    isolated: !allowed,
    policies: step.policies,
    matches: allowed && step.policy ? [{ policy: step.policy, rule: step.rule ?? -1 }] : [],
    misses: [],
    walk,
    reason: `${allowed ? 'allowed' : 'denied'} by ${step.tier} tier rule ${rule} for ${describeAddress(other)} on ${connection.protocol}/${connection.port}`,
  };
}

function checkPolicy(
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
    misses.push({ policy: name, rule: -1, reason: `${name} has no ${direction} rules; it only isolates` });
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
