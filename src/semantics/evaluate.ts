/**
 * The reference evaluator: the semantics oracle every compiled path is tested against. It walks
 * the API's rules literally — is the side isolated, which policies select it, does any rule's
 * peer and port match — and records why. It favours being obviously right over being fast.
 */
import type { IpFamily } from '../net/ip.ts';
import { ADMIN_TIER, BASELINE_TIER, DEFAULT_TIER } from '../model/cluster-policy.ts';
import type { Semantics } from '../model/types.ts';
import { policyKey } from '../model/types.ts';
import { describeAddress } from './describe.ts';
import { noteExplanation } from './explanation-meter.ts';
import type { ClusterIndex } from './match.ts';
import { checkPolicy, policyAllows } from './np-rules.ts';
import {
  gateReason,
  networkPolicyGate,
  subjectGate,
  type NetworkPolicyGate,
  type OpenGate,
} from './side-gate.ts';
import { hasCalicoPolicies, tierPoliciesOutcome, walkTier } from './tiers.ts';
import { sidePlan } from './side-plan.ts';
import { tierPlan } from './tier-plan.ts';
import { defaultTierMembers, defaultTierOutcome, walkDefaultTier } from './default-tier.ts';
import { AFTER_EVERY_TIER } from './types.ts';
import type {
  Address,
  Connection,
  EvaluateOptions,
  RuleMatch,
  RuleMiss,
  SideStatus,
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
  const semantics: Semantics = options.semantics ?? 'v1';
  // The tiers that select the endpoint, found once per endpoint: the matrix asks of every pair.
  for (const step of sidePlan(index, endpoint, direction, semantics)) {
    if (step.kind === 'tier') {
      const outcome = tierPoliciesOutcome(
        index,
        step.tier,
        step.policies,
        endpoint,
        direction,
        connection,
        family,
      );
      if (outcome === 'allow' || outcome === 'deny') return outcome === 'allow';
      continue;
    }
    if (step.kind === 'default') {
      const outcome = defaultTierOutcome(index, step.side, endpoint, direction, connection, family, options);
      if (outcome !== 'continue') return outcome === 'allow';
      continue;
    }
    const np = networkPolicyGate(index, endpoint, other, direction, options);
    if (!np.open)
      return np.policies.some((policy) =>
        policyAllows(index, policy, connection, direction, other, family, semantics),
      );
    if (np.final) return true;
  }
  return true;
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
  let openGate: OpenGate = { open: true, status: 'not-isolated', endpoint };
  for (const tier of tierPlan(index.cluster)) {
    if (tier.name !== DEFAULT_TIER) {
      const step = walkTier(index, tier, endpoint, direction, connection, family);
      if (!step) continue;
      walk.push(step);
      if (step.outcome === 'allow' || step.outcome === 'deny')
        return tierDecided(direction, endpoint.id, step, walk, other, connection);
      continue;
    }
    const members =
      semantics === 'v1' ? defaultTierMembers(index, endpoint, direction, semantics) : undefined;
    if (members) {
      const result = walkDefaultTier(index, members, endpoint, direction, connection, family, options);
      walk.push(result.step);
      if (!result.decided) continue;
      return {
        direction,
        endpoint: endpoint.id,
        status: result.status,
        allowed: result.allowed,
        isolated: result.status !== 'node-local',
        policies: result.policies,
        matches: result.matches,
        misses: result.misses,
        walk,
        reason: result.reason,
      };
    }
    const np = networkPolicyGate(index, endpoint, other, direction, options);
    if (!np.open)
      return networkPolicyDecided(index, np, connection, direction, other, family, semantics, walk);
    if (np.final) {
      walk.push({ tier: 'NetworkPolicy', ...networkPolicyPlace(index), outcome: 'allow', policies: [] });
      return openSide(direction, np, subject, walk);
    }
    walk.push({ tier: 'NetworkPolicy', ...networkPolicyPlace(index), outcome: 'not-isolated', policies: [] });
    openGate = np;
  }
  walk.push({ tier: AFTER_EVERY_TIER, shownAs: 'no tier decided', outcome: 'allow', policies: [] });
  return openSide(direction, openGate, subject, walk);
}

/** A pod NetworkPolicy isolates, decided by its NetworkPolicies' rules. */
function networkPolicyDecided(
  index: ClusterIndex,
  np: Extract<NetworkPolicyGate, { open: false }>,
  connection: Connection,
  direction: 'egress' | 'ingress',
  other: Address,
  family: IpFamily | undefined,
  semantics: Semantics,
  walk: TierStep[],
): SideVerdict {
  const { endpoint } = np;
  const matches: RuleMatch[] = [];
  const misses: RuleMiss[] = [];
  for (const policy of np.policies)
    checkPolicy(index, policy, connection, direction, other, family, semantics, matches, misses);
  const names = np.policies.map(policyKey);
  const allowed = matches.length > 0;
  const first = matches[0];
  walk.push({
    tier: 'NetworkPolicy',
    ...networkPolicyPlace(index),
    outcome: allowed ? 'allow' : 'deny',
    ...(first ? { policy: first.policy, rule: first.rule, ruleLabel: `${direction}[${first.rule}]` } : {}),
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

/** With Calico's policies in the input, NetworkPolicy's place is shown as Calico's default tier. */
function networkPolicyPlace(index: ClusterIndex): { shownAs?: string } {
  return hasCalicoPolicies(index) ? { shownAs: DEFAULT_TIER } : {};
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
    policies: walkedPolicies(walk),
    matches: [],
    misses: [],
    walk,
    reason: passedOn(walk, gate, direction) ?? gateReason(gate, subject, direction),
  };
}

/** The policies a walk met that selected the side (tiers that passed it on, or did not hold it). */
function walkedPolicies(walk: readonly TierStep[]): readonly string[] {
  if (walk.every((step) => step.policies.length === 0)) return [];
  return [...new Set(walk.flatMap((step) => step.policies))];
}

/**
 * Why a side that earlier tiers' policies selected and passed on is open: those tiers' Pass,
 * and no policy of the default tier selecting it — "no policy selects it" would be untrue.
 */
function passedOn(
  walk: readonly TierStep[],
  gate: OpenGate,
  direction: 'egress' | 'ingress',
): string | undefined {
  const passed = walk.filter((step) => step.outcome === 'pass').map((step) => `tier ${step.tier}`);
  if (passed.length === 0 || gate.status !== 'not-isolated' || !gate.endpoint) return undefined;
  const tiers = passed.length === 1 ? passed[0] : `${passed.slice(0, -1).join(', ')} and ${passed.at(-1)}`;
  const passes = `${tiers} ${passed.length === 1 ? 'passes' : 'pass'} it on`;
  // The default tier's own policies selected the side: it passed it on too, past every tier, or
  // none of them holds it there — "no policy selects it" would be untrue.
  const inDefault = walk.find((step) => step.tier === DEFAULT_TIER && step.policies.length > 0);
  if (inDefault?.outcome === 'pass') return `${passes}, and no tier after it decides, so it is allowed`;
  if (inDefault)
    return `${passes}, and no policy of the default tier that selects ${gate.endpoint.id} (${inDefault.policies.join(', ')}) isolates it for ${direction}`;
  return `${passes}, and no policy of the default tier selects ${gate.endpoint.id} for ${direction}, so it is not isolated`;
}

/** A side decided by a rule of a tier other than NetworkPolicy's (or by the end of a Calico tier). */
function tierDecided(
  direction: 'egress' | 'ingress',
  endpoint: string,
  step: TierStep,
  walk: readonly TierStep[],
  other: Address,
  connection: Connection,
): SideVerdict {
  const allowed = step.outcome === 'allow';
  const word = allowed ? 'allowed' : 'denied';
  const builtIn = step.tier === ADMIN_TIER || step.tier === BASELINE_TIER;
  const status: SideStatus = builtIn
    ? `${word}-by-${step.tier === ADMIN_TIER ? 'admin' : 'baseline'}`
    : `${word}-by-tier`;
  const on = `for ${describeAddress(other)} on ${connection.protocol}/${connection.port}`;
  const ruleName = `${step.ruleLabel ?? `${direction}[${step.rule}]`}${step.ruleName ? ` "${step.ruleName}"` : ''}`;
  const order = step.order !== undefined ? `, order ${step.order}` : '';
  const reason = step.endOfTier
    ? `denied by the end of tier ${step.tier}: ${step.policies.join(', ')} select${step.policies.length === 1 ? 's' : ''} ${endpoint} for ${direction} and no rule of the tier matched ${describeAddress(other)} on ${connection.protocol}/${connection.port}`
    : builtIn
      ? `${word} by ${step.tier} tier rule ${step.policy} ${ruleName} ${on}`
      : `${word} by ${step.policy} ${ruleName} (tier ${step.tier}${order}) ${on}`;
  return {
    direction,
    endpoint,
    status,
    allowed,
    isolated: !allowed,
    policies: step.policies,
    matches:
      allowed && step.policy
        ? [
            {
              policy: step.policy,
              rule: step.rule ?? -1,
              ...(step.ruleLabel ? { label: step.ruleLabel } : {}),
            },
          ]
        : [],
    misses: [],
    walk,
    reason,
  };
}
