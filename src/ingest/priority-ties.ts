/**
 * Policies of one tier with the same priority whose subjects share a pod: the API says their
 * order is up to the implementation. (Calico's orders are tie-broken by name, as Calico does, and
 * Cilium's policies have no order: neither is looked at.) Palisade's order is fixed (model/precedence.ts), but users
 * should know they rely on it. Only policies that share a priority are looked at; for each, the
 * namespaces its subject can select are found once, and pods are checked only in namespaces two
 * of them share.
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { clusterPolicyLabel, policyEngine, subjectSelects } from '../model/cluster-policy.ts';
import { selectorMatches } from '../model/selector.ts';
import type { Cluster, ClusterPolicy, Endpoint } from '../model/types.ts';

export function priorityTies(cluster: Cluster): Diagnostic[] {
  const groups = new Map<string, ClusterPolicy[]>();
  for (const policy of cluster.clusterPolicies) {
    if (policyEngine(policy.kind) !== 'network-policy-api') continue;
    const key = `${policy.tier}/${policy.priority}`;
    groups.set(key, [...(groups.get(key) ?? []), policy]);
  }
  const tied = [...groups.values()].filter((g) => g.length > 1);
  if (tied.length === 0) return [];
  const podsByNamespace = new Map<string, Endpoint[]>();
  for (const e of cluster.endpoints) {
    const list = podsByNamespace.get(e.namespace) ?? [];
    list.push(e);
    podsByNamespace.set(e.namespace, list);
  }
  // Once per distinct subject namespace selector: a thousand tied policies share a few dozen.
  const scopes = new Map<string, Set<string>>();
  const namespacesOf = (policy: ClusterPolicy): Set<string> => {
    const selector = policy.subject.namespaceSelector;
    let found = scopes.get(selector.key);
    if (found) return found;
    scopes.set(selector.key, (found = new Set<string>()));
    for (const [name, ns] of cluster.namespaces)
      if (podsByNamespace.has(name) && selectorMatches(selector, ns.labels)) found.add(name);
    return found;
  };
  const diagnostics: Diagnostic[] = [];
  for (const group of tied) {
    const scopeOfPolicy = group.map(namespacesOf);
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const first = group[i] as ClusterPolicy;
        const second = group[j] as ClusterPolicy;
        const shared = sharedPod(
          cluster,
          first,
          second,
          scopeOfPolicy[i] as Set<string>,
          scopeOfPolicy[j] as Set<string>,
          podsByNamespace,
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

function sharedPod(
  cluster: Cluster,
  a: ClusterPolicy,
  b: ClusterPolicy,
  scopeA: ReadonlySet<string>,
  scopeB: ReadonlySet<string>,
  podsByNamespace: ReadonlyMap<string, readonly Endpoint[]>,
): Endpoint | undefined {
  for (const namespace of scopeA) {
    if (!scopeB.has(namespace)) continue;
    const labels = cluster.namespaces.get(namespace)?.labels;
    const pod = podsByNamespace
      .get(namespace)
      ?.find((e) => subjectSelects(a.subject, labels, e) && subjectSelects(b.subject, labels, e));
    if (pod) return pod;
  }
  return undefined;
}
