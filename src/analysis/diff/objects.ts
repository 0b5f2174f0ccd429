/**
 * What changed between two inputs, object by object: policies (by content, wherever they sit in
 * the files), namespaces' labels, endpoints' labels, addresses and ports, nodes. Objects are
 * matched by identity (`Kind ns/name`); content keys ignore source locations, so moving a policy
 * to another file is no change.
 */
import { clusterPolicyObjectName } from '../../model/cluster-policy.ts';
import type { Cluster, ClusterPolicy, Endpoint, NetworkPolicy, SourceLocation } from '../../model/types.ts';
import { formatIp } from '../../net/ip.ts';
import type { ObjectChange } from './types.ts';

/** An object's identity in its cluster, not its content: the same policy read from the API and from a file differ only in these. */
const IDENTITY_FIELDS = new Set(['uid', 'generation']);

/**
 * Canonical JSON of a model object without its location, nor (on the object itself) its uid and
 * generation (bigints as strings).
 */
export function contentKey(value: unknown): string {
  return JSON.stringify(value, function (this: unknown, key, v: unknown) {
    if (key === 'location' || (this === value && IDENTITY_FIELDS.has(key))) return undefined;
    return typeof v === 'bigint' ? v.toString() : v;
  });
}

/** `Deployment shop/web`, `Pod shop/web-1`: the identity an endpoint keeps across inputs. */
export function endpointObject(endpoint: Pick<Endpoint, 'kind' | 'namespace' | 'name'>): string {
  return `${endpoint.kind} ${endpoint.namespace}/${endpoint.name}`;
}

export function networkPolicyObject(policy: Pick<NetworkPolicy, 'namespace' | 'name'>): string {
  return `NetworkPolicy ${policy.namespace}/${policy.name}`;
}

export function clusterPolicyObject(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  return clusterPolicyObjectName(policy);
}

/** The fields of an endpoint that policy reads, each as a comparable string. */
export function endpointFields(endpoint: Endpoint, cluster: Cluster): Record<string, string> {
  return {
    labels: contentKey(Object.entries(endpoint.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    addresses: endpoint.ips.map(formatIp).join(','),
    ports: endpoint.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(','),
    hostNetwork: String(endpoint.hostNetwork),
    node: endpoint.node ?? '',
    'namespace labels': contentKey(cluster.namespaces.get(endpoint.namespace)?.labels ?? {}),
  };
}

/** Fields of an endpoint that differ between the two inputs (namespace labels included). */
export function changedFields(
  before: Endpoint,
  beforeCluster: Cluster,
  after: Endpoint,
  afterCluster: Cluster,
): string[] {
  const a = endpointFields(before, beforeCluster);
  const b = endpointFields(after, afterCluster);
  return Object.keys(a).filter((k) => a[k] !== b[k]);
}

interface Keyed {
  readonly object: string;
  readonly key: string;
  readonly location?: SourceLocation;
  readonly fields?: Record<string, string>;
}

function compare(before: readonly Keyed[], after: readonly Keyed[]): ObjectChange[] {
  const old = new Map(before.map((k) => [k.object, k]));
  const changes: ObjectChange[] = [];
  for (const next of after) {
    const previous = old.get(next.object);
    old.delete(next.object);
    const where = next.location ? { location: next.location } : {};
    if (!previous) changes.push({ object: next.object, change: 'added', ...where });
    else if (previous.key !== next.key) {
      const fields =
        previous.fields && next.fields
          ? Object.keys(next.fields).filter((f) => previous.fields?.[f] !== next.fields?.[f])
          : undefined;
      changes.push({ object: next.object, change: 'modified', ...(fields ? { fields } : {}), ...where });
    }
  }
  for (const gone of old.values())
    changes.push({
      object: gone.object,
      change: 'removed',
      ...(gone.location ? { location: gone.location } : {}),
    });
  return changes;
}

function keyed(cluster: Cluster): Keyed[] {
  const result: Keyed[] = [];
  for (const p of cluster.policies)
    result.push({
      object: networkPolicyObject(p),
      key: contentKey(p),
      ...(p.location ? { location: p.location } : {}),
    });
  for (const p of cluster.clusterPolicies)
    result.push({
      object: clusterPolicyObject(p),
      key: contentKey(p),
      ...(p.location ? { location: p.location } : {}),
    });
  for (const ns of cluster.namespaces.values()) {
    const fields = { labels: contentKey(ns.labels), DefaultDeny: ns.legacyIngressIsolation ?? '' };
    result.push({
      object: `Namespace ${ns.name}`,
      key: contentKey(fields),
      fields,
      ...(ns.location ? { location: ns.location } : {}),
    });
  }
  for (const e of cluster.endpoints) {
    // Namespace labels are reported on the Namespace; here only the endpoint's own fields.
    const { 'namespace labels': _ignored, ...fields } = endpointFields(e, cluster);
    result.push({
      object: endpointObject(e),
      key: contentKey(fields),
      fields,
      ...(e.location ? { location: e.location } : {}),
    });
  }
  for (const node of cluster.nodes.values()) {
    const fields = { labels: contentKey(node.labels), addresses: node.addresses.map(formatIp).join(',') };
    result.push({ object: `Node ${node.name}`, key: contentKey(fields), fields });
  }
  return result;
}

/** Every object added, removed or modified, in the order: new input's objects, then removed ones. */
export function objectChanges(before: Cluster, after: Cluster): ObjectChange[] {
  return compare(keyed(before), keyed(after));
}
