/**
 * What the page shows first and needs to build its controls: counts, and the ports the
 * policies name (the port selector offers those, most used first).
 */
import type { Cluster } from '../model/types.ts';
import type { Snapshot } from './snapshot.ts';

export interface InputSummary {
  readonly version: number;
  readonly readAt: number;
  readonly namespaces: number;
  readonly pods: number;
  readonly workloads: number;
  readonly policies: number;
  readonly clusterPolicies: number;
  /** `80/TCP`, `dns/UDP`…: ports the policies' rules name, most used first. */
  readonly ports: readonly string[];
  /** Whether a diff view exists (`--against`). */
  readonly against: boolean;
}

export function inputSummary(snapshot: Snapshot): InputSummary {
  const cluster = snapshot.input.cluster;
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
    ports: policyPorts(cluster),
    against: snapshot.against !== undefined,
  };
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
