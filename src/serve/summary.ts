/**
 * What the page shows first and needs to build its controls: counts, and the ports the
 * policies name (the port selector offers those, most used first).
 */
import { policyKindCounts, policyKindWords, summarizeDiagnostics } from '../analysis/index.ts';
import type { Cluster } from '../model/types.ts';
import type { InputSummary, SummaryAnswer } from './api-types.ts';
import { parsePort, type Snapshot } from './snapshot.ts';

/** Pods above which the page opens on one port rather than on any. */
const ANY_PORT_PODS = 2000;

export function inputSummary(snapshot: Snapshot): InputSummary {
  const cluster = snapshot.input.cluster;
  const ports = policyPorts(cluster);
  const workloads = new Set(
    cluster.endpoints.map((e) => `${e.namespace}/${e.workload?.name ?? e.name}/${e.workload?.kind ?? 'Pod'}`),
  );
  return {
    version: snapshot.version,
    readAt: snapshot.readAt,
    namespaces: new Set(cluster.endpoints.map((e) => e.namespace)).size,
    pods: cluster.endpoints.length,
    workloads: workloads.size,
    policies: cluster.policies.length,
    clusterPolicies: cluster.clusterPolicies.length,
    policyKinds: policyKindWords(policyKindCounts(cluster)),
    ports,
    defaultPort: cluster.endpoints.length > ANY_PORT_PODS ? (ports[0] ?? 'any') : 'any',
    against: snapshot.against !== undefined,
  };
}

/** What `/api/summary` answers (and the page's document embeds): the summary, the last reading's error, the diagnostics' counts. */
export function summaryAnswer(
  snapshot: Snapshot,
  readError: string | undefined,
  flows?: string,
): SummaryAnswer {
  return {
    ...inputSummary(snapshot),
    readError: readError ?? null,
    diagnosticCounts: summarizeDiagnostics(snapshot.input.diagnostics),
    flows: flows ?? null,
  };
}

/**
 * Computes what the page shows first — the namespace heatmap on the default port — so that it is
 * ready when the page, loading meanwhile, asks for it.
 */
export function warmFirstView(snapshot: Snapshot): void {
  snapshot.reachability.heatmap(parsePort(inputSummary(snapshot).defaultPort), 'namespace');
}

function policyPorts(cluster: Cluster): string[] {
  const uses = new Map<string, number>();
  const count = (port: number | string | undefined, protocol: string): void => {
    if (port === undefined) return;
    const key = `${port}/${protocol}`;
    uses.set(key, (uses.get(key) ?? 0) + 1);
  };
  for (const policy of cluster.policies)
    for (const rule of [...policy.ingress, ...policy.egress])
      for (const port of rule.ports ?? []) count(port.port, port.protocol);
  for (const policy of cluster.clusterPolicies)
    for (const rule of [...policy.ingress, ...policy.egress])
      for (const port of rule.ports ?? [])
        if (port.type === 'named') count(port.name, 'TCP');
        else if (port.type === 'number') count(port.port, port.protocol);
  return [...uses.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 50)
    .map(([key]) => key);
}
