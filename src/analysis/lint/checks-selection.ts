/**
 * Selection checks: policies that select nothing, peers that match nothing, and endpoints no
 * policy selects. They compare selectors with the input's pods and workloads, so they only run
 * when the input has some (a repository of policies alone would make every selector "empty").
 */
import { clusterPolicyLabel, namespaceMatches } from '../../model/cluster-policy.ts';
import { selectorMatches, selectorText } from '../../model/selector.ts';
import { policyKey, type ClusterPeer, type Endpoint, type SelectorPeer } from '../../model/types.ts';
import { describeClusterPeer, describePeer } from '../../semantics/index.ts';
import { classRows, type ClassRow } from '../class-view.ts';
import { endpointClasses } from '../equivalence.ts';
import { endpointRow, groupEndpoints } from '../workload-view.ts';
import {
  clusterPolicyObject,
  clusterPolicyRules,
  networkPolicyRules,
  listSome,
  peersField,
  policyObject,
  rowsOf,
  type LintCheck,
  type LintContext,
} from './context.ts';
import type { Finding } from './types.ts';

export const selectsNothing: LintCheck = {
  codes: ['POLICY_SELECTS_NOTHING'],
  run(context) {
    const findings: Finding[] = [];
    for (const policy of context.cluster.policies) {
      if (context.selection(policy).length > 0) continue;
      const inNamespace = context.endpoints.endpointsIn(policy.namespace).filter((e) => !e.hostNetwork);
      const there = inNamespace.length
        ? `namespace ${policy.namespace} has ${listSome(rowsOf(inNamespace).labels)}`
        : `namespace ${policy.namespace} has none in the input`;
      findings.push(
        context.finding(
          'POLICY_SELECTS_NOTHING',
          `${policyKey(policy)} selects no pod or workload: podSelector ${selectorText(policy.podSelector)} matches none, and ${there}`,
          context.where(policyObject(policy), ['spec', 'podSelector'], policy.location),
        ),
      );
    }
    for (const policy of context.cluster.clusterPolicies) {
      if (context.subjects(policy).length > 0) continue;
      findings.push(
        context.finding(
          'POLICY_SELECTS_NOTHING',
          `${clusterPolicyLabel(policy)}'s subject selects no pod or workload of the input`,
          context.where(clusterPolicyObject(policy), ['spec', 'subject'], policy.location),
        ),
      );
    }
    return findings;
  },
};

export const peerMatchesNothing: LintCheck = {
  codes: ['PEER_MATCHES_NOTHING'],
  run(context) {
    const findings: Finding[] = [];
    for (const { policy, direction, rule } of networkPolicyRules(context.cluster)) {
      (rule.peers ?? []).forEach((peer, p) => {
        if (peer.type !== 'selector') return;
        if (context.endpoints.selectorPeerEndpoints(peer, policy.namespace).length > 0) return;
        findings.push(
          context.finding(
            'PEER_MATCHES_NOTHING',
            `${policyKey(policy)} ${direction}[${rule.index}] peer ${p} (${describePeer(peer, policy.namespace)}) matches no pod or workload${namespaceNote(context, peer)}`,
            context.where(
              policyObject(policy),
              ['spec', direction, rule.index, peersField(direction), p],
              policy.location,
            ),
          ),
        );
      });
    }
    for (const { policy, direction, rule } of clusterPolicyRules(context.cluster)) {
      if (rule.failClosed) continue;
      rule.peers.forEach((peer, p) => {
        if (clusterPeerMatchesSomething(context, peer, context.subjects(policy))) return;
        findings.push(
          context.finding(
            'PEER_MATCHES_NOTHING',
            `${clusterPolicyLabel(policy)} ${direction}[${rule.index}] peer ${p} (${describeClusterPeer(peer)}) matches nothing in the input`,
            context.where(
              clusterPolicyObject(policy),
              ['spec', direction, rule.index, peersField(direction), p],
              policy.location,
            ),
          ),
        );
      });
    }
    return findings;
  },
};

/** Why a namespace selector found nothing, when that is the reason. */
function namespaceNote(context: LintContext, peer: SelectorPeer): string {
  if (!peer.namespaceSelector || context.endpoints.namespacesMatching(peer.namespaceSelector).length > 0)
    return '';
  const declared = [...context.cluster.namespaces.values()].some((ns) => !ns.implicit);
  return declared
    ? ` (no namespace has labels ${selectorText(peer.namespaceSelector)})`
    : ` (no namespace has labels ${selectorText(peer.namespaceSelector)}; the input has no Namespace objects, so namespaces have only their name label)`;
}

function clusterPeerMatchesSomething(
  context: LintContext,
  peer: ClusterPeer,
  subjects: readonly Endpoint[],
): boolean {
  switch (peer.type) {
    case 'networks':
    case 'outside':
    case 'domainNames':
      return true; // addresses outside the cluster: nothing to compare with
    case 'nodes': {
      const nodes = [...context.cluster.nodes.values()];
      // Without Node objects, node labels are unknown: say nothing rather than guess.
      if (!nodes.some((n) => n.declared)) return true;
      return nodes.some((n) => selectorMatches(peer.selector, n.labels));
    }
    case 'pods': {
      const { selector } = peer.namespaces;
      if (selector) {
        return context.endpoints
          .namespacesMatching(selector)
          .some((ns) => context.endpoints.podsMatching(ns.name, peer.podSelector).length > 0);
      }
      // sameLabels / notSameLabels select relative to each subject's namespace.
      const subjectNamespaces = new Set(subjects.map((e) => e.namespace));
      for (const subjectNs of subjectNamespaces) {
        const subjectLabels = context.cluster.namespaces.get(subjectNs)?.labels ?? {};
        for (const ns of context.cluster.namespaces.values()) {
          if (!namespaceMatches(peer.namespaces, ns.labels, subjectLabels)) continue;
          if (context.endpoints.podsMatching(ns.name, peer.podSelector).length > 0) return true;
        }
      }
      return false;
    }
  }
}

export const notIsolated: LintCheck = {
  codes: ['WORKLOAD_NOT_ISOLATED'],
  run(context) {
    const covered = new Set<Endpoint>();
    for (const policy of context.cluster.policies) for (const e of context.selection(policy)) covered.add(e);
    for (const policy of context.cluster.clusterPolicies)
      for (const e of context.subjects(policy)) covered.add(e);
    const open = context.cluster.endpoints.filter((endpoint) => {
      if (endpoint.hostNetwork || covered.has(endpoint)) return false;
      // Under the v1beta1 proposal a namespace's DefaultDeny isolates ingress.
      return !(
        context.semantics === 'v1beta1-proposal' &&
        context.cluster.namespaces.get(endpoint.namespace)?.legacyIngressIsolation === 'DefaultDeny'
      );
    });
    // One finding per workload (its pods together), as the matrix shows them — or per class.
    const groups = groupEndpoints(open, 'workload');
    const perClass = classesOfOpen(context, open, groups.length);
    if (perClass)
      return perClass.map((row) => {
        const first = row.members[0] as Endpoint;
        return {
          ...context.finding(
            'WORKLOAD_NOT_ISOLATED',
            `no policy selects ${row.label}: every connection to and from it is allowed`,
            context.where(`${first.kind} ${first.namespace}/${first.name}`, [], first.location),
          ),
          members: row.members.map((m) => endpointRow(m).label),
        };
      });
    return groups.map((group) => {
      const first = group.members[0] as Endpoint;
      const pods = group.members.length > 1 ? ` (${group.members.length} pods)` : '';
      return context.finding(
        'WORKLOAD_NOT_ISOLATED',
        `no policy selects ${group.label}${pods}: every connection to and from it is allowed`,
        context.where(`${first.kind} ${first.namespace}/${first.name}`, [], first.location),
      );
    });
  },
};

/** Findings past which `lint --by auto` says endpoint findings per class, when classes are at most half as many. */
const CLASSES_FROM_FINDINGS = 1000;

/**
 * The classes of the endpoints no policy selects, when findings are said per class (asked, or
 * auto with many findings and at most half as many classes); undefined for per workload.
 */
function classesOfOpen(
  context: Parameters<LintCheck['run']>[0],
  open: readonly Endpoint[],
  findings: number,
): readonly ClassRow[] | undefined {
  if (context.grouping === 'workload') return undefined;
  if (context.grouping === 'auto' && findings <= CLASSES_FROM_FINDINGS) return undefined;
  const { classOf, representatives } = endpointClasses(context.cluster, open);
  const { rows } = classRows(open, classOf, representatives.length);
  if (context.grouping === 'auto' && rows.length * 2 > findings) return undefined;
  context.groupedByClass = { findings, classes: rows.length };
  return rows;
}
