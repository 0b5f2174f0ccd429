/**
 * Policies of one tier with the same priority whose subjects share a pod: the API says their
 * order is up to the implementation. Palisade's order is fixed (model/precedence.ts), but users
 * should know they rely on it. Only groups of equal priority are compared, so this stays cheap.
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { clusterPolicyLabel, subjectSelects } from '../model/cluster-policy.ts';
import type { Cluster, ClusterPolicy } from '../model/types.ts';

export function priorityTies(cluster: Cluster): Diagnostic[] {
  const groups = new Map<string, ClusterPolicy[]>();
  for (const policy of cluster.clusterPolicies) {
    const key = `${policy.tier}/${policy.priority}`;
    groups.set(key, [...(groups.get(key) ?? []), policy]);
  }
  const diagnostics: Diagnostic[] = [];
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const first = group[i] as ClusterPolicy;
        const second = group[j] as ClusterPolicy;
        const shared = cluster.endpoints.find(
          (e) =>
            subjectSelects(first.subject, cluster.namespaces.get(e.namespace)?.labels, e) &&
            subjectSelects(second.subject, cluster.namespaces.get(e.namespace)?.labels, e),
        );
        if (!shared && cluster.endpoints.length > 0) continue;
        const where = second.location ?? { file: '<input>' };
        const common = shared ? `both select ${shared.id}` : 'no pods are known to tell whether they overlap';
        diagnostics.push(
          makeDiagnostic(
            'PRIORITY_TIE',
            `${clusterPolicyLabel(first)} and ${clusterPolicyLabel(second)} are both ${first.tier} tier, priority ${first.priority} (${common}); Palisade evaluates ${clusterPolicyLabel(first)} first`,
            { ...where, object: `${second.kind} ${second.name}` },
          ),
        );
      }
    }
  }
  return diagnostics;
}
