/**
 * Rules as cover items (one per peer): NetworkPolicy rules and cluster policy rules, for one
 * subject endpoint. Matching goes through the reference evaluator's own functions (peerMatches,
 * clusterPeerMatches, resolveNamedPort, clusterRulePorts), so containment means what the
 * evaluator means; only the address intervals and candidate lists are derived here, and a
 * property test holds them to those functions.
 */
import { clusterPolicyLabel, clusterRuleLabel, namespaceMatches } from '../../model/cluster-policy.ts';
import { portSetOf, MAX_PORT, MIN_PORT } from '../../model/port-set.ts';
import type {
  ClusterPeer,
  ClusterPolicy,
  ClusterRule,
  Endpoint,
  NetworkPolicy,
  Peer,
  PolicyPort,
  PolicyRule,
} from '../../model/types.ts';
import { policyKey } from '../../model/types.ts';
import { selectorMatches } from '../../model/selector.ts';
import { hostCidr } from '../../net/ip.ts';
import {
  cidrInterval,
  ipBlockIntervals,
  normalizeIntervals,
  subtractIntervals,
  type IpInterval,
} from '../../net/intervals.ts';
import {
  ALL_PORTS,
  clusterPeerMatches,
  clusterRulePorts,
  listMatchesAll,
  peerMatches,
  resolveNamedPort,
  type Address,
  type PortSet,
} from '../../semantics/index.ts';
import { clusterPolicyObject, policyObject, type Direction, type LintContext } from './context.ts';
import { EVERY_ADDRESS, type CoverItem, type RuleRef } from './cover.ts';

/** Stands for any address outside the cluster when resolving ports (named ports resolve to nothing there). */
const OUTSIDE: Address = { kind: 'ip', ip: { family: 4, value: 0n } };
const endpointAddress = (endpoint: Endpoint): Address => ({ kind: 'endpoint', endpoint });

export function networkPolicyRuleRef(policy: NetworkPolicy, direction: Direction, rule: PolicyRule): RuleRef {
  return {
    label: `${policyKey(policy)} ${direction}[${rule.index}]`,
    object: policyObject(policy),
    path: ['spec', direction, rule.index],
    ...(policy.location ? { location: policy.location } : {}),
  };
}

export function clusterRuleRef(policy: ClusterPolicy, direction: Direction, rule: ClusterRule): RuleRef {
  const field = rule.field ?? direction;
  return {
    label: `${clusterPolicyLabel(policy)} ${clusterRuleLabel(rule, direction)}${rule.name ? ` "${rule.name}"` : ''}`,
    object: clusterPolicyObject(policy),
    path: [...(policy.specPath ?? ['spec']), field, rule.index],
    ...(policy.location ? { location: policy.location } : {}),
  };
}

/** A NetworkPolicy rule's items for one subject (ingress named ports resolve against the subject). */
export function networkPolicyItems(
  context: LintContext,
  policy: NetworkPolicy,
  direction: Direction,
  rule: PolicyRule,
  subject: Endpoint,
): CoverItem[] {
  const ref = networkPolicyRuleRef(policy, direction, rule);
  const ports = rulePorts(context, rule.ports, direction, subject);
  if (listMatchesAll(rule.peers, context.semantics)) {
    return [
      {
        rule: ref,
        matches: () => true,
        intervals: EVERY_ADDRESS,
        domains: [],
        candidates: () => context.cluster.endpoints,
        ports,
      },
    ];
  }
  return (rule.peers ?? []).map((peer) => peerItem(context, policy, peer, ref, ports));
}

function peerItem(
  context: LintContext,
  policy: NetworkPolicy,
  peer: Peer,
  rule: RuleRef,
  ports: (endpoint: Endpoint | undefined) => PortSet,
): CoverItem {
  const evaluation = context.evaluation;
  const intervals = peer.type === 'ipBlock' ? ipBlockIntervals(peer.cidr, peer.except) : [];
  return {
    rule,
    matches: (endpoint, family) =>
      peerMatches(evaluation, peer, policy.namespace, endpointAddress(endpoint), family),
    intervals,
    domains: [],
    candidates: () =>
      peer.type === 'selector'
        ? context.endpoints.selectorPeerEndpoints(peer, policy.namespace)
        : context.endpoints.endpointsInIntervals(intervals),
    ports,
  };
}

/**
 * A NetworkPolicy rule's ports as a function of the destination: named ports resolve against the
 * destination, which is the subject for ingress and the peer for egress (nothing, outside).
 */
function rulePorts(
  context: LintContext,
  ports: readonly PolicyPort[] | undefined,
  direction: Direction,
  subject: Endpoint,
): (endpoint: Endpoint | undefined) => PortSet {
  if (listMatchesAll(ports, context.semantics)) return () => ALL_PORTS;
  const list = ports ?? [];
  const build = (destination: Address): PortSet =>
    portSetOf(
      list.flatMap((port) => {
        if (port.port === undefined) return [{ protocol: port.protocol, from: MIN_PORT, to: MAX_PORT }];
        if (typeof port.port === 'number')
          return [{ protocol: port.protocol, from: port.port, to: port.endPort ?? port.port }];
        const resolved = resolveNamedPort(destination, port.port, port.protocol);
        return resolved === undefined ? [] : [{ protocol: port.protocol, from: resolved, to: resolved }];
      }),
    );
  const named = list.some((p) => typeof p.port === 'string');
  if (!named || direction === 'ingress') {
    const fixed = build(endpointAddress(subject));
    return () => fixed;
  }
  const outside = build(OUTSIDE);
  return (endpoint) => (endpoint ? build(endpointAddress(endpoint)) : outside);
}

/**
 * A cluster policy rule's items for one subject. A fail-closed rule matches nothing when it
 * allows and everything otherwise, as the evaluator treats it.
 */
export function clusterRuleItems(
  context: LintContext,
  policy: ClusterPolicy,
  direction: Direction,
  rule: ClusterRule,
  subject: Endpoint,
): CoverItem[] {
  const ref = clusterRuleRef(policy, direction, rule);
  if (rule.failClosed) {
    if (rule.action === 'allow') return [];
    return [
      {
        rule: ref,
        matches: () => true,
        intervals: EVERY_ADDRESS,
        domains: ['*'],
        candidates: () => context.cluster.endpoints,
        ports: () => ALL_PORTS,
      },
    ];
  }
  const subjectPorts = direction === 'ingress' ? clusterRulePorts(rule, endpointAddress(subject)) : undefined;
  const outsidePorts = clusterRulePorts(rule, OUTSIDE);
  const ports = (endpoint: Endpoint | undefined): PortSet =>
    subjectPorts ?? (endpoint ? clusterRulePorts(rule, endpointAddress(endpoint)) : outsidePorts);
  return rule.peers.map((peer) => clusterPeerItem(context, peer, ref, subject, ports));
}

function clusterPeerItem(
  context: LintContext,
  peer: ClusterPeer,
  rule: RuleRef,
  subject: Endpoint,
  ports: (endpoint: Endpoint | undefined) => PortSet,
): CoverItem {
  const evaluation = context.evaluation;
  const intervals = clusterPeerIntervals(context, peer, subject);
  return {
    rule,
    matches: (endpoint, family) =>
      clusterPeerMatches(evaluation, peer, subject, endpointAddress(endpoint), family),
    intervals,
    domains: peer.type === 'domainNames' ? peer.names : [],
    candidates: () => {
      if (peer.type === 'pods') {
        const subjectLabels = context.cluster.namespaces.get(subject.namespace)?.labels ?? {};
        const namespaces = peer.namespaces.selector
          ? context.endpoints.namespacesMatching(peer.namespaces.selector)
          : [...context.cluster.namespaces.values()].filter((ns) =>
              namespaceMatches(peer.namespaces, ns.labels, subjectLabels),
            );
        return namespaces.flatMap((ns) => context.endpoints.podsMatching(ns.name, peer.podSelector));
      }
      return context.endpoints.endpointsInIntervals(intervals);
    },
    ports,
  };
}

/**
 * The plain addresses a cluster peer matches: networks, blocks outside the cluster (less the
 * nodes' addresses), and the addresses of matching nodes (Cilium's host: the subject's own).
 */
function clusterPeerIntervals(context: LintContext, peer: ClusterPeer, subject: Endpoint): IpInterval[] {
  if (peer.type === 'networks') return peer.cidrs.map(cidrInterval);
  if (peer.type === 'outside') {
    const nodes = [...context.cluster.nodes.values()].flatMap((n) =>
      n.addresses.map((a) => cidrInterval(hostCidr(a))),
    );
    return subtractIntervals(normalizeIntervals(peer.cidrs.map(cidrInterval)), normalizeIntervals(nodes));
  }
  if (peer.type !== 'nodes') return [];
  const result: IpInterval[] = [];
  for (const node of context.cluster.nodes.values())
    if (
      selectorMatches(peer.selector, node.labels) &&
      (peer.only === undefined || (peer.only === 'own') === (node.name === subject.node))
    )
      for (const address of node.addresses) result.push(cidrInterval(hostCidr(address)));
  return result;
}
