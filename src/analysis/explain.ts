/**
 * Per-endpoint explanations in plain words: is it isolated for ingress and egress, by which
 * policies, and what each rule lets in or out (with the endpoints each rule's peers match).
 */
import { formatIp } from '../net/ip.ts';
import { policyKey, type Cluster, type Endpoint, type PolicyPort, type Semantics } from '../model/types.ts';
import {
  describeClusterRule,
  describeRule,
  indexCluster,
  namedPortOf,
  ciliumRules,
  defaultTierEntries,
  defaultTierMembers,
  selectingClusterPolicies,
  selectingPolicies,
  tierHolds,
  tierPlan,
  type ClusterIndex,
} from '../semantics/index.ts';
import {
  ADMIN_TIER,
  BASELINE_TIER,
  clusterPolicyLabel,
  clusterRuleLabel,
  DEFAULT_TIER,
  policyEngine,
  policyIsolates,
  PROFILES_TIER,
  type ClusterPolicy,
  type ClusterRule,
} from '../model/cluster-policy.ts';
import { droppedPoliciesFor, type DroppedPolicy } from './dropped-policies.ts';
import { RulePeers, type EndpointList } from './rule-peers.ts';

export interface RuleExplanation {
  readonly policy: string;
  readonly rule: number;
  readonly description: string;
  /** Endpoints in the input that the rule's peers match (for "anywhere" rules: all); a list of ids in JSON. */
  readonly peers: EndpointList;
  /**
   * Why the rule allows nothing, when it names only ports that no destination declares
   * (`no pod it reaches declares a TCP port named postgres`); absent when it allows something.
   */
  readonly allowsNothing?: string;
}

/** A cluster-policy rule that applies to the endpoint, in the order its tier evaluates it. */
interface TierRuleExplanation {
  /** `Admin`, `Baseline`, a Calico tier, `default` (Calico's and Cilium's beside NetworkPolicy), `Profiles`. */
  readonly tier: string;
  readonly policy: string;
  readonly rule: number;
  readonly name?: string;
  /** Calico's and Cilium's rules: `ingress[0]`, `ingressDeny[1]`. */
  readonly label?: string;
  /** Calico's policies: their order. */
  readonly order?: number;
  /** A Calico tier after NetworkPolicy's (Baseline and Profiles always are). */
  readonly after?: true;
  readonly description: string;
  readonly peers: EndpointList;
}

export interface DirectionExplanation {
  readonly isolated: boolean;
  readonly policies: readonly string[];
  readonly rules: readonly RuleExplanation[];
  /**
   * Cluster-policy rules in the order the tiers evaluate them: Admin (and Calico's tiers before
   * NetworkPolicy's), the default tier's Calico and Cilium rules, Baseline (and the tiers after).
   */
  readonly tiers: readonly TierRuleExplanation[];
  /** Tiers that deny what none of their rules matched, for this endpoint (absent when none). */
  readonly tierEnds?: readonly string[];
  readonly summary: string;
  /** Network policies dropped as invalid that would have selected the endpoint this way (absent when none). */
  readonly dropped?: readonly DroppedPolicy[];
}

export interface EndpointExplanation {
  readonly endpoint: string;
  readonly kind: string;
  readonly labels: string;
  readonly ips: readonly string[];
  readonly hostNetwork: boolean;
  readonly ingress: DirectionExplanation;
  readonly egress: DirectionExplanation;
}

export function explainEndpoints(
  cluster: Cluster,
  endpoints: readonly Endpoint[],
  semantics: Semantics = 'v1',
  /** Called every thousand endpoints with (explained, total), for progress display. */
  onProgress?: (done: number, total: number) => void,
): EndpointExplanation[] {
  const explain = explainer(cluster, semantics);
  return endpoints.map((endpoint, i) => {
    if (onProgress && i % 1000 === 0) onProgress(i, endpoints.length);
    return explain(endpoint);
  });
}

/**
 * A function explaining one endpoint at a time, sharing what rules have in common (their
 * descriptions and peers) between the endpoints it is asked about.
 */
export function explainer(
  cluster: Cluster,
  semantics: Semantics = 'v1',
): (endpoint: Endpoint) => EndpointExplanation {
  const index = indexCluster(cluster);
  const peers = new RulePeers(index);
  // Descriptions and peer lists are the rule's, shared by every endpoint it applies to.
  const described = new Map<object, string>();
  const describe = (rule: object, make: () => string): string => {
    let text = described.get(rule);
    if (text === undefined) described.set(rule, (text = make()));
    return text;
  };
  const nothing = new Map<object, string | undefined>();
  const allowsNothing = (rule: object, make: () => string | undefined): string | undefined => {
    if (!nothing.has(rule)) nothing.set(rule, make());
    return nothing.get(rule);
  };
  const context: ExplainContext = { index, peers, describe, allowsNothing, semantics };
  return (endpoint) => explainOne(context, cluster, endpoint);
}

/** The fields of an explanation that say which endpoint it is about (the rest is its policy's). */
export function endpointIdentity(
  endpoint: Endpoint,
): Pick<EndpointExplanation, 'endpoint' | 'kind' | 'labels' | 'ips' | 'hostNetwork'> {
  return {
    endpoint: endpoint.id,
    kind: endpoint.kind,
    labels: Object.entries(endpoint.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    ips: endpoint.ips.map(formatIp),
    hostNetwork: endpoint.hostNetwork,
  };
}

function explainOne(context: ExplainContext, cluster: Cluster, endpoint: Endpoint): EndpointExplanation {
  return {
    ...endpointIdentity(endpoint),
    ingress: withDropped(
      cluster,
      endpoint,
      'ingress',
      withTiers(context, endpoint, 'ingress', explainDirection(context, endpoint, 'ingress')),
    ),
    egress: withDropped(
      cluster,
      endpoint,
      'egress',
      withTiers(context, endpoint, 'egress', explainDirection(context, endpoint, 'egress')),
    ),
  };
}

interface ExplainContext {
  readonly index: ClusterIndex;
  readonly peers: RulePeers;
  readonly describe: (rule: object, make: () => string) => string;
  /** Why an egress rule allows nothing (its ports resolve on no destination it matches), per rule. */
  readonly allowsNothing: (rule: object, make: () => string | undefined) => string | undefined;
  readonly semantics: Semantics;
}

function withDropped(
  cluster: Cluster,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  explanation: DirectionExplanation,
): DirectionExplanation {
  const dropped = droppedPoliciesFor(cluster, [endpoint], direction);
  return dropped.length ? { ...explanation, dropped } : explanation;
}

/** The cluster-policy rules of every tier that apply to the endpoint, in evaluation order. */
function withTiers(
  context: ExplainContext,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  explanation: Omit<DirectionExplanation, 'tiers'>,
): DirectionExplanation {
  const { index, semantics } = context;
  const tiers: TierRuleExplanation[] = [];
  const tierEnds: string[] = [];
  let engines: { isolating: string[]; calico: boolean } | undefined;
  if (!endpoint.hostNetwork) {
    let afterDefault = false;
    const push = (tier: string, policy: ClusterPolicy, rule: ClusterRule): void => {
      const engine = policyEngine(policy.kind) !== 'network-policy-api';
      tiers.push({
        tier,
        ...(afterDefault && tier !== BASELINE_TIER && tier !== PROFILES_TIER ? { after: true as const } : {}),
        policy: clusterPolicyLabel(policy),
        rule: rule.index,
        ...(rule.name ? { name: rule.name } : {}),
        ...(engine ? { label: clusterRuleLabel(rule, direction) } : {}),
        ...(engine && policyEngine(policy.kind) === 'calico' && Number.isFinite(policy.priority)
          ? { order: policy.priority }
          : {}),
        description: context.describe(rule, () => describeClusterRule(rule, direction)),
        peers: context.peers.ofClusterRule(policy, rule, direction, endpoint),
      });
    };
    for (const tier of tierPlan(index.cluster)) {
      if (tier.name === DEFAULT_TIER) {
        afterDefault = true;
        const members = defaultTierMembers(index, endpoint, direction, semantics);
        if (!members) continue;
        // Calico's by order; Cilium's deny rules first, then its allow rules (default-tier.ts).
        for (const entry of defaultTierEntries(members)) {
          if (entry.kind === 'calico')
            for (const rule of entry.policy[direction]) push(tier.name, entry.policy, rule);
          else if (entry.kind === 'segment')
            for (const action of ['deny', 'allow'] as const)
              for (const { policy, rule } of ciliumRules(members, direction, action))
                push(tier.name, policy, rule);
        }
        const isolating = [...members.calico, ...members.cilium].filter((p) => policyIsolates(p, direction));
        if (isolating.length > 0)
          engines = { isolating: isolating.map(clusterPolicyLabel), calico: members.calico.length > 0 };
        continue;
      }
      const policies = selectingClusterPolicies(index, endpoint, direction, tier.name);
      for (const policy of policies) for (const rule of policy[direction]) push(tier.name, policy, rule);
      if (tier.name !== ADMIN_TIER && tier.name !== BASELINE_TIER && tierHolds(tier, policies, direction))
        tierEnds.push(tier.name);
    }
  }
  const ends = tierEnds.length > 0 ? { tierEnds } : {};
  if (engines && !explanation.isolated) {
    const by = engines.isolating.join(', ');
    return {
      ...explanation,
      isolated: true,
      policies: engines.isolating,
      tiers,
      ...ends,
      // Cilium has no tiers: its policies alone hold the pod by Cilium's default deny.
      summary: engines.calico
        ? `isolated by ${by} in the default tier: what no rule there allows is denied`
        : `isolated by ${by} (Cilium's default deny): what no rule allows is denied`,
    };
  }
  if (engines && explanation.isolated) {
    // NetworkPolicy isolates, and so do Calico's or Cilium's policies of its tier: name them all,
    // and say that their rules decide too — NetworkPolicy's "nothing is allowed" alone is untrue
    // when a Calico rule of the tier allows.
    const by = explanation.policies.length
      ? explanation.policies.join(', ')
      : "the namespace's DefaultDeny annotation";
    const own = `isolated by ${by}`;
    const rest = explanation.summary.startsWith(own) ? explanation.summary.slice(own.length) : undefined;
    const tierRules = tiers.filter((t) => t.tier === DEFAULT_TIER).length;
    const decide =
      tierRules === 1
        ? '1 rule of the default tier below applies in its order'
        : `${tierRules} rules of the default tier below apply in their order`;
    const allowing = explanation.rules.filter((r) => r.allowsNothing === undefined).length;
    const merged =
      tierRules === 0 || rest === undefined
        ? rest
        : allowing === 0
          ? `; no NetworkPolicy rule allows anything, and ${decide}`
          : `${rest}, and ${decide}`;
    return {
      ...explanation,
      policies: [...explanation.policies, ...engines.isolating],
      tiers,
      ...ends,
      summary:
        merged !== undefined
          ? `isolated by ${[by, ...engines.isolating].join(', ')}${merged}`
          : explanation.summary,
    };
  }
  if (tiers.length === 0 || explanation.isolated || endpoint.hostNetwork)
    return { ...explanation, tiers, ...ends };
  return {
    ...explanation,
    tiers,
    ...ends,
    summary:
      'not isolated by NetworkPolicy: the cluster policy rules below decide what they match; the rest is allowed',
  };
}

function explainDirection(
  context: ExplainContext,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
): Omit<DirectionExplanation, 'tiers'> {
  const { index, semantics } = context;
  const open = (summary: string): Omit<DirectionExplanation, 'tiers'> => ({
    isolated: false,
    policies: [],
    rules: [],
    summary,
  });
  if (endpoint.hostNetwork) return open('uses the host network; not subject to NetworkPolicy');
  if (semantics === 'v1beta1-proposal') {
    if (direction === 'egress') return open('not isolated (the v1beta1 proposal has no egress policy)');
    if (index.cluster.namespaces.get(endpoint.namespace)?.legacyIngressIsolation !== 'DefaultDeny') {
      return open(
        `not isolated (namespace ${endpoint.namespace} has no DefaultDeny annotation): all traffic allowed`,
      );
    }
  }
  const policies = selectingPolicies(index, endpoint, direction, semantics);
  if (policies.length === 0 && semantics === 'v1') return open('not isolated: all traffic allowed');
  const rules: RuleExplanation[] = [];
  for (const policy of policies) {
    for (const rule of direction === 'ingress' ? policy.ingress : policy.egress) {
      const matched = context.peers.ofRule(policy, direction, rule);
      // Ingress ports are the explained pod's own; egress ports the destinations' (the rule's,
      // so asked once per rule).
      const nothing =
        direction === 'ingress'
          ? unresolvedPorts(rule.ports, { some: (test) => test(endpoint) }, endpoint.id)
          : context.allowsNothing(rule, () => unresolvedPorts(rule.ports, matched, undefined));
      rules.push({
        policy: policyKey(policy),
        rule: rule.index,
        description: context.describe(rule, () => describeRule(rule, direction, policy.namespace)),
        peers: matched,
        ...(nothing ? { allowsNothing: nothing } : {}),
      });
    }
  }
  const by = policies.length
    ? `by ${policies.map(policyKey).join(', ')}`
    : `by the namespace's DefaultDeny annotation`;
  const allowing = rules.filter((r) => r.allowsNothing === undefined).length;
  const summary =
    rules.length === 0
      ? `isolated ${by}; nothing is allowed`
      : allowing === rules.length
        ? `isolated ${by}; ${rules.length} rule${rules.length === 1 ? '' : 's'} allow${rules.length === 1 ? 's' : ''} traffic`
        : allowing === 0
          ? `isolated ${by}; nothing is allowed: ${rules.length === 1 ? 'its rule names' : `its ${rules.length} rules name`} only ports no destination declares`
          : `isolated ${by}; ${allowing} of ${rules.length} rules allow traffic: ${rules.length - allowing} name${rules.length - allowing === 1 ? 's' : ''} only ports no destination declares`;
  return { isolated: true, policies: policies.map(policyKey), rules, summary };
}

/**
 * Why a rule allows nothing when every port it names is a named port that none of
 * `destinations` declares (lint says the same: NAMED_PORT_UNRESOLVED); undefined otherwise.
 * `self` names the one destination of an ingress rule, the explained pod.
 */
function unresolvedPorts(
  ports: readonly PolicyPort[] | undefined,
  destinations: Pick<EndpointList, 'some'>,
  self: string | undefined,
): string | undefined {
  if (!ports || ports.length === 0) return undefined;
  if (ports.some((p) => typeof p.port !== 'string')) return undefined;
  const declared = (p: PolicyPort): boolean =>
    destinations.some((e) => namedPortOf(e, p.port as string, p.protocol) !== undefined);
  if (ports.some(declared)) return undefined;
  const names = [...new Set(ports.map((p) => `${p.protocol} port named ${String(p.port)}`))].join(' or ');
  return self ? `${self} declares no ${names}` : `no pod it reaches declares a ${names}`;
}
