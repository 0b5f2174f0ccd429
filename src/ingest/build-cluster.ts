/**
 * Assembles decoded objects into a Cluster: later definitions of the same object win (with a
 * warning), namespaces that are referenced but not defined are made up from their name, endpoint
 * ids are made unique, pods are attributed to their workloads (`workloads.ts`), node
 * addresses are gathered from pods' host IPs, and pods that share an IP are reported.
 */
import { parseIp, type IpAddress } from '../net/ip.ts';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import {
  NAMESPACE_NAME_LABEL,
  type Cluster,
  type ClusterPolicy,
  type Endpoint,
  type IngressRoute,
  type Namespace,
  type NetworkPolicy,
  type NodeInfo,
  type Labels,
  type RejectedPolicy,
  type Service,
  type SourceLocation,
} from '../model/types.ts';
import type { TierSpec } from '../model/cluster-policy.ts';
import type { DecodedObject } from './types.ts';
import { sortByPrecedence } from '../model/precedence.ts';
import { priorityTies } from './priority-ties.ts';
import { attributeWorkloads, type OwnedEndpoint } from './workloads.ts';
import { sharedPodAddresses } from './shared-pod-addresses.ts';
import { withIdentityLabels } from './identity-labels.ts';
import { enginesMixed, withTiers } from './calico-tiers.ts';
import { ingressBackendProblems } from './ingress-backends.ts';

export interface IdentifiedObject {
  readonly identity: string;
  readonly object: DecodedObject;
}

/** `rejected`: network policies dropped as invalid, kept unless a valid definition of the same one is in the input. */
export function buildCluster(
  objects: readonly IdentifiedObject[],
  rejected: readonly RejectedPolicy[] = [],
): {
  cluster: Cluster;
  diagnostics: Diagnostic[];
} {
  const diagnostics: Diagnostic[] = [];
  const latest = new Map<string, DecodedObject>();
  for (const { identity, object } of objects) {
    const previous = latest.get(identity);
    if (previous) {
      const where = locationOf(object) ?? { file: '<input>', line: 0, column: 0 };
      const first = locationOf(previous);
      const firstText = first ? ` (first defined at ${first.file}:${first.line}:${first.column})` : '';
      diagnostics.push(
        makeDiagnostic(
          'OBJECT_DUPLICATE',
          `${identity} is defined more than once${firstText}; this definition wins`,
          {
            ...where,
            object: identity,
          },
        ),
      );
      latest.delete(identity); // re-insert so input order reflects the winning definition
    }
    latest.set(identity, object);
  }

  const namespaces = new Map<string, Namespace>();
  const owned: OwnedEndpoint[] = [];
  const policies: NetworkPolicy[] = [];
  const clusterPolicies: ClusterPolicy[] = [];
  const declaredNodes = new Map<string, NodeInfo>();
  const nodeAddresses = new Map<string, IpAddress[]>();
  const tiers = new Map<string, TierSpec>();
  const accounts = new Map<string, Labels>();
  const services: Service[] = [];
  const stagedPolicies: NetworkPolicy[] = [];
  const stagedClusterPolicies: ClusterPolicy[] = [];
  const ingresses: IngressRoute[] = [];
  for (const object of latest.values()) {
    if (object.kind === 'Staged') {
      // Apart from the enforced ones: no implicit namespace, no tie or engine diagnostics.
      if (object.object.kind === 'NetworkPolicy') stagedPolicies.push(object.object.policy);
      else stagedClusterPolicies.push(object.object.policy);
    } else if (object.kind === 'Namespace') namespaces.set(object.namespace.name, object.namespace);
    else if (object.kind === 'NetworkPolicy') policies.push(object.policy);
    else if (object.kind === 'ClusterPolicy') clusterPolicies.push(object.policy);
    else if (object.kind === 'ClusterPolicies') for (const p of object.policies) clusterPolicies.push(p);
    else if (object.kind === 'Tier') tiers.set(object.tier.name, object.tier);
    else if (object.kind === 'ServiceAccount')
      accounts.set(`${object.namespace}/${object.name}`, object.labels);
    else if (object.kind === 'Node') declaredNodes.set(object.node.name, object.node);
    else if (object.kind === 'Service') services.push(object.service);
    else if (object.kind === 'Ingress') ingresses.push(object.ingress);
    else {
      owned.push(
        object.owner ? { endpoint: object.endpoint, owner: object.owner } : { endpoint: object.endpoint },
      );
      if (object.endpoint.node) addNodeAddresses(nodeAddresses, object.endpoint.node, object.hostIps);
    }
  }

  const attributed = attributeWorkloads(owned);
  const endpoints = withIdentityLabels(attributed, clusterPolicies, accounts) ?? attributed;
  // Pods' namespaces, then policies': visited in place (175,000 objects at shape a ×1).
  for (const e of endpoints) implicitNamespace(namespaces, diagnostics, e.namespace, e.location);
  for (const p of policies) implicitNamespace(namespaces, diagnostics, p.namespace, p.location);
  for (const p of clusterPolicies)
    if (p.namespace !== undefined) implicitNamespace(namespaces, diagnostics, p.namespace, p.location);
  const tiered = withTiers(clusterPolicies, tiers, diagnostics);
  diagnostics.push(...enginesMixed(clusterPolicies));

  const cluster: Cluster = {
    namespaces: new Map([...namespaces].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    endpoints: assignIds(endpoints),
    policies: [...policies].sort((a, b) => compareKeys(a.namespace, a.name, b.namespace, b.name)),
    clusterPolicies: sortByPrecedence(tiered),
    nodes: mergeNodes(declaredNodes, nodeAddresses),
    ...rejectedOnly(rejected, policies, tiered),
    ...(services.length > 0
      ? { services: services.sort((a, b) => compareKeys(a.namespace, a.name, b.namespace, b.name)) }
      : {}),
    ...(stagedPolicies.length + stagedClusterPolicies.length > 0
      ? {
          staged: {
            policies: stagedPolicies.sort((a, b) => compareKeys(a.namespace, a.name, b.namespace, b.name)),
            clusterPolicies: sortByPrecedence(stagedClusterPolicies),
          },
        }
      : {}),
    ...(ingresses.length > 0
      ? { ingresses: ingresses.sort((a, b) => compareKeys(a.namespace, a.name, b.namespace, b.name)) }
      : {}),
  };
  for (const problem of ingressBackendProblems(ingresses, services)) diagnostics.push(problem);
  for (const tie of priorityTies(cluster)) diagnostics.push(tie);
  for (const shared of sharedPodAddresses(cluster.endpoints)) diagnostics.push(shared);
  return { cluster, diagnostics };
}

/** A namespace referenced but not defined: made up from its name, with a diagnostic saying so. */
function implicitNamespace(
  namespaces: Map<string, Namespace>,
  diagnostics: Diagnostic[],
  namespace: string,
  location: SourceLocation | undefined,
): void {
  if (namespaces.has(namespace)) return;
  namespaces.set(namespace, {
    name: namespace,
    labels: { [NAMESPACE_NAME_LABEL]: namespace },
    implicit: true,
  });
  diagnostics.push(
    makeDiagnostic(
      'NAMESPACE_IMPLICIT',
      `namespace "${namespace}" is referenced but not defined; assuming it exists with only the label ${NAMESPACE_NAME_LABEL}=${namespace}`,
      { ...(location ?? { file: '<input>' }), object: `Namespace ${namespace}` },
    ),
  );
}

/** A rejected policy's namespace; cluster-scoped ones ('') sort first. */
const namespaceOf = (r: RejectedPolicy): string => (r.scope === 'namespace' ? r.namespace : '');

function rejectedOnly(
  rejected: readonly RejectedPolicy[],
  policies: readonly NetworkPolicy[],
  clusterPolicies: readonly ClusterPolicy[],
): { rejectedPolicies?: RejectedPolicy[] } {
  if (rejected.length === 0) return {};
  // By kind, namespace and name: short labels (`gnp/x`) would take a NetworkPolicy `x` in a
  // namespace called `gnp` for the GlobalNetworkPolicy.
  const key = (kind: string, namespace: string, name: string): string =>
    `${kind}\u0000${namespace}\u0000${name}`;
  const valid = new Set(policies.map((p) => key('', p.namespace, p.name)));
  for (const p of clusterPolicies) {
    const kind =
      p.kind === 'CalicoNetworkPolicy' ? 'calico' : p.kind === 'CiliumNetworkPolicy' ? 'cilium' : p.kind;
    // A Cilium policy of `specs` is one policy per entry (`name[0]`, …): the object's name.
    valid.add(key(kind, p.namespace ?? '', p.name.replace(/\[\d+\]$/, '')));
  }
  const kept = rejected
    .filter((r) =>
      r.scope === 'cluster'
        ? !valid.has(key(r.clusterKind, '', r.name))
        : !valid.has(key(r.engine ?? '', r.namespace, r.name)),
    )
    .sort((a, b) => compareKeys(namespaceOf(a), a.name, namespaceOf(b), b.name));
  return kept.length ? { rejectedPolicies: kept } : {};
}

/** `ns/name` for every endpoint, with `[Kind]` added to workloads whose name a pod also uses. */
function assignIds(endpoints: readonly Omit<Endpoint, 'id'>[]): Endpoint[] {
  // Each `ns/name` written once (it is a pod's id as it is): three per endpoint were a tenth of
  // building a cluster of 100,000 pods.
  const names = endpoints.map((e) => `${e.namespace}/${e.name}`);
  const count = new Map<string, number>();
  for (const name of names) count.set(name, (count.get(name) ?? 0) + 1);
  return endpoints
    .map((e, i) => {
      const name = names[i] as string;
      return { id: endpointId(e, count.get(name) ?? 1, name), ...e };
    })
    .sort(
      (a, b) =>
        compareKeys(a.namespace, a.name, b.namespace, b.name) ||
        (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0),
    );
}

/**
 * An endpoint's id, given how many endpoints share its `ns/name`: `ns/name` for a pod or a lone
 * name, `ns/name[Kind]` for a workload whose name another endpoint uses too.
 */
export function endpointId(
  endpoint: Pick<Endpoint, 'kind' | 'namespace' | 'name'>,
  sameName: number,
  plain = `${endpoint.namespace}/${endpoint.name}`,
): string {
  return endpoint.kind === 'Pod' || sameName === 1 ? plain : `${plain}[${endpoint.kind}]`;
}

function compareKeys(ns1: string, n1: string, ns2: string, n2: string): number {
  return ns1 < ns2 ? -1 : ns1 > ns2 ? 1 : n1 < n2 ? -1 : n1 > n2 ? 1 : 0;
}

/**
 * Node objects as given, plus nodes known only from pods (no labels). A pod's host IP that its
 * Node object does not list is added to it: the pod saw it, so packets can come from it.
 */
function mergeNodes(
  declared: ReadonlyMap<string, NodeInfo>,
  fromPods: ReadonlyMap<string, readonly IpAddress[]>,
): Map<string, NodeInfo> {
  const names = [...new Set([...declared.keys(), ...fromPods.keys()])].sort();
  const nodes = new Map<string, NodeInfo>();
  for (const name of names) {
    const node = declared.get(name);
    const addresses = [...(node?.addresses ?? [])];
    for (const ip of fromPods.get(name) ?? []) {
      if (!addresses.some((a) => a.family === ip.family && a.value === ip.value)) addresses.push(ip);
    }
    nodes.set(name, { name, addresses, labels: node?.labels ?? {}, declared: node !== undefined });
  }
  return nodes;
}

function addNodeAddresses(nodes: Map<string, IpAddress[]>, node: string, texts: readonly string[]): void {
  const list = nodes.get(node) ?? [];
  for (const text of texts) {
    const parsed = parseIp(text);
    // Compared by family and value (as mergeNodes does), not by formatting both for every pod.
    if (!parsed.ok) continue;
    const { family, value } = parsed.value;
    if (!list.some((ip) => ip.family === family && ip.value === value)) list.push(parsed.value);
  }
  nodes.set(node, list);
}

function locationOf(object: DecodedObject): SourceLocation | undefined {
  switch (object.kind) {
    case 'Namespace':
      return object.namespace.location;
    case 'NetworkPolicy':
      return object.policy.location;
    case 'Endpoint':
      return object.endpoint.location;
    case 'ClusterPolicy':
      return object.policy.location;
    case 'ClusterPolicies':
      return object.policies[0]?.location;
    case 'Tier':
      return object.tier.location;
    case 'Service':
      return object.service.location;
    case 'Staged':
      return object.object.policy.location;
    case 'Ingress':
      return object.ingress.location;
    case 'ServiceAccount':
    case 'Node':
      return undefined;
  }
}
