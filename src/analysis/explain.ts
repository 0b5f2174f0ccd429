/**
 * Per-endpoint explanations in plain words: is it isolated for ingress and egress, by which
 * policies, and what each rule lets in or out (with the endpoints each rule's peers match).
 */
import { cidrContains, formatIp } from '../net/ip.ts';
import { policyKey, type Cluster, type Endpoint, type Peer, type Semantics } from '../model/types.ts';
import {
  describeRule,
  indexCluster,
  peerMatches,
  selectingPolicies,
  type ClusterIndex,
} from '../semantics/index.ts';

export interface RuleExplanation {
  readonly policy: string;
  readonly rule: number;
  readonly description: string;
  /** Endpoints in the input that the rule's peers match (for "anywhere" rules: all). */
  readonly peers: readonly string[];
}

export interface DirectionExplanation {
  readonly isolated: boolean;
  readonly policies: readonly string[];
  readonly rules: readonly RuleExplanation[];
  readonly summary: string;
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
): EndpointExplanation[] {
  const index = indexCluster(cluster);
  return endpoints.map((endpoint) => ({
    endpoint: endpoint.id,
    kind: endpoint.kind,
    labels: Object.entries(endpoint.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    ips: endpoint.ips.map(formatIp),
    hostNetwork: endpoint.hostNetwork,
    ingress: explainDirection(index, endpoint, 'ingress', semantics),
    egress: explainDirection(index, endpoint, 'egress', semantics),
  }));
}

function explainDirection(
  index: ClusterIndex,
  endpoint: Endpoint,
  direction: 'ingress' | 'egress',
  semantics: Semantics,
): DirectionExplanation {
  const open = (summary: string): DirectionExplanation => ({
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
      rules.push({
        policy: policyKey(policy),
        rule: rule.index,
        description: describeRule(rule, direction, policy.namespace),
        peers: matchingEndpoints(index, rule.peers, policy.namespace),
      });
    }
  }
  const by = policies.length
    ? `by ${policies.map(policyKey).join(', ')}`
    : `by the namespace's DefaultDeny annotation`;
  const summary =
    rules.length === 0
      ? `isolated ${by}; nothing is allowed`
      : `isolated ${by}; ${rules.length} rule${rules.length === 1 ? '' : 's'} allow${rules.length === 1 ? 's' : ''} traffic`;
  return { isolated: true, policies: policies.map(policyKey), rules, summary };
}

function matchingEndpoints(
  index: ClusterIndex,
  peers: readonly Peer[] | undefined,
  namespace: string,
): string[] {
  const all = index.cluster.endpoints;
  if (peers === undefined || peers.length === 0) return all.map((e) => e.id);
  return all
    .filter((e) =>
      peers.some((peer) =>
        peer.type === 'ipBlock'
          ? e.ips.some((ip) => cidrContains(peer.cidr, ip) && !peer.except.some((x) => cidrContains(x, ip)))
          : peerMatches(index, peer, namespace, { kind: 'endpoint', endpoint: e }, undefined),
      ),
    )
    .map((e) => e.id);
}
