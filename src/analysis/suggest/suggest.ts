/**
 * `suggest`: least-privilege NetworkPolicies from observed connections. The steps: units (which
 * pods a policy is written for, and by which labels), the traffic per unit, the policies, and
 * their verification with the reference evaluator; what the suggestion allows beyond the
 * connections seen is said for a reviewer (`generalised`).
 */
import type { Cluster, Endpoint } from '../../model/types.ts';
import { buildPolicies, DNS_NAMESPACE, gatherTraffic, isDnsServer } from './policies.ts';
import type { Generalisation, Observation, Prohibition, SuggestOptions, Suggestion, Unit } from './types.ts';
import { buildUnits } from './units.ts';
import { verifySuggestion } from './verify.ts';

/** Pod names listed per workload in a generalisation, before "and N more". */
const NAMES_SHOWN = 3;

export function suggestPolicies(
  cluster: Cluster,
  observations: readonly Observation[],
  prohibitions: readonly Prohibition[],
  options: SuggestOptions = {},
): Suggestion {
  const dns = options.dns ?? true;
  const { units, unitOf } = buildUnits(cluster.endpoints);
  const withPods = [...new Set(units.map((u) => u.namespace))].sort();
  const wanted = options.namespaces?.length ? new Set(options.namespaces) : undefined;
  const namespaces = wanted ? withPods.filter((ns) => wanted.has(ns)) : withPods;
  const scope = new Set(namespaces);
  const inScope = (namespace: string): boolean => scope.has(namespace);
  const traffic = gatherTraffic(observations, { inScope, dns, unitOf });
  const dnsServers = cluster.endpoints.some((e) => !e.hostNetwork && isDnsServer(e));
  const policies = buildPolicies(units, traffic, namespaces, { dns, dnsServers });
  const verification = verifySuggestion({
    cluster,
    policies,
    units,
    unitOf,
    pairs: traffic.pairs,
    inScope,
    dns,
    prohibitions,
  });
  const seen = units.filter((u) => traffic.written.has(u));
  return {
    policies,
    units,
    generalised: [
      ...seen.flatMap((u) => unitGeneralisation(u)),
      ...(dns && namespaces.length
        ? [
            {
              kind: 'dns' as const,
              text: `DNS: every pod in ${namespaces.length === 1 ? namespaces[0] : `${namespaces.length} namespaces`} may reach ${DNS_NAMESPACE}/k8s-app=kube-dns on 53/UDP and 53/TCP${dnsServers ? '' : ' (the cluster has no such pod yet)'}`,
            },
          ]
        : []),
    ],
    verification,
    observations: observations.length,
    namespaces,
    scoped: wanted !== undefined,
    clusterPoliciesLeftOut: cluster.clusterPolicies.length,
    connections: observations.reduce((sum, o) => sum + o.count, 0),
  };
}

function selectorText(unit: Unit): string {
  const entries = Object.entries(unit.selector);
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : `every pod of ${unit.namespace}`;
}

function podNames(members: readonly Endpoint[]): string {
  const names = members
    .slice(0, NAMES_SHOWN)
    .map((m) => (m.kind === 'Pod' ? m.name : `${m.name}[${m.kind}]`));
  const more = members.length - NAMES_SHOWN;
  return more > 0 ? `${names.join(', ')} and ${more} more` : names.join(', ');
}

/** What a unit's selector stands for, when it is more than one pod seen. */
function unitGeneralisation(unit: Unit): Generalisation[] {
  if (unit.workloads.length > 1) {
    return [
      {
        kind: Object.keys(unit.selector).length ? 'merged' : 'namespace-wide',
        text: `${unit.workloads.join(', ')}: no labels tell them apart, one selector for all → ${selectorText(unit)}`,
      },
    ];
  }
  const only = unit.members[0];
  if (unit.members.length === 1 && only?.kind === 'Pod' && !only.workload) return [];
  return [{ kind: 'workload', text: `${unit.namespace}/${podNames(unit.members)} → ${selectorText(unit)}` }];
}
