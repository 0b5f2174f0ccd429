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

/**
 * Whether two model values are equal as `contentKey` sees them (locations left out, and the uid
 * and generation of the objects themselves), without building either key.
 */
function sameContent(a: unknown, b: unknown, top = true): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameContent(a[i], b[i], false)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // Keys whose value is undefined are absent to JSON; so they are here.
  const keys = (o: Record<string, unknown>): string[] =>
    Object.keys(o).filter((k) => k !== 'location' && o[k] !== undefined && !(top && IDENTITY_FIELDS.has(k)));
  const xs = keys(x);
  const ys = keys(y);
  if (xs.length !== ys.length) return false;
  for (let i = 0; i < xs.length; i++) {
    const k = xs[i] as string;
    // contentKey keeps key order: objects built alike list their keys alike.
    if (k !== ys[i] || !sameContent(x[k], y[k], false)) return false;
  }
  return true;
}

/**
 * A key per policy (NetworkPolicy or cluster policy) of two inputs that is equal exactly when the
 * policies are the same object by identity and by content — what `contentKey` told apart, found by
 * comparing each new policy with its old version instead of serializing 150,000 policies (at
 * 100,000 pods their keys were a sixth of a diff, and their strings much of its garbage). A name
 * that occurs twice in one input falls back to the content key.
 */
export function policyVersions(before: Cluster, after: Cluster): (policy: object) => string {
  const keys = new Map<object, string>();
  const named = (cluster: Cluster): Map<string, (NetworkPolicy | ClusterPolicy)[]> => {
    const byName = new Map<string, (NetworkPolicy | ClusterPolicy)[]>();
    const add = (name: string, p: NetworkPolicy | ClusterPolicy): void => {
      const list = byName.get(name);
      if (list) list.push(p);
      else byName.set(name, [p]);
    };
    for (const p of cluster.policies) add(networkPolicyObject(p), p);
    for (const p of cluster.clusterPolicies) add(clusterPolicyObject(p), p);
    return byName;
  };
  const old = named(before);
  for (const [name, list] of old)
    for (const p of list) keys.set(p, list.length === 1 ? `${name}\u0000old` : contentKey(p));
  for (const [name, list] of named(after)) {
    const was = old.get(name);
    for (const p of list) {
      if (list.length > 1 || (was && was.length > 1)) keys.set(p, contentKey(p));
      else if (was && sameContent(was[0], p)) keys.set(p, `${name}\u0000old`);
      else keys.set(p, `${name}\u0000new`);
    }
  }
  return (policy) => keys.get(policy) ?? contentKey(policy);
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

/** Labels as one comparable string, whatever order their keys were written in. */
function labelsKey(labels: Readonly<Record<string, string>>): string {
  const names = Object.keys(labels).sort();
  let key = '';
  for (const name of names) key += `${name}\u0000${labels[name]}\u0000`;
  return key;
}

/** An endpoint's own fields (its namespace's labels are the Namespace's). */
function ownFields(endpoint: Endpoint): Record<string, string> {
  return {
    labels: labelsKey(endpoint.labels),
    addresses: endpoint.ips.map(formatIp).join(','),
    ports: endpoint.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(','),
    hostNetwork: String(endpoint.hostNetwork),
    node: endpoint.node ?? '',
  };
}

/**
 * Each endpoint's fields and their key, computed once per input: the object comparison, the
 * sorting of a workload's members and the workload's key all read them (at 100,000 pods, three
 * computations of each were a tenth of a diff). Keys are the fields joined, not their JSON: the
 * fields are always the same five, in the same order.
 */
export class EndpointFieldKeys {
  private readonly own = new Map<Endpoint, { fields: Record<string, string>; key: string }>();
  private readonly keys = new Map<Endpoint, string>();
  private readonly namespaceKeys = new Map<string, string>();

  constructor(private readonly cluster: Cluster) {}

  /** The endpoint's own fields (without its namespace's labels) and their key. */
  ownOf(endpoint: Endpoint): { fields: Record<string, string>; key: string } {
    let found = this.own.get(endpoint);
    if (!found) {
      const fields = ownFields(endpoint);
      const key = `${fields.labels}\u0001${fields.addresses}\u0001${fields.ports}\u0001${fields.hostNetwork}\u0001${fields.node}`;
      this.own.set(endpoint, (found = { fields, key }));
    }
    return found;
  }

  /** The key of every field policy reads, its namespace's labels included. */
  keyOf(endpoint: Endpoint): string {
    let key = this.keys.get(endpoint);
    if (key === undefined) {
      let namespace = this.namespaceKeys.get(endpoint.namespace);
      if (namespace === undefined) {
        namespace = labelsKey(this.cluster.namespaces.get(endpoint.namespace)?.labels ?? {});
        this.namespaceKeys.set(endpoint.namespace, namespace);
      }
      this.keys.set(endpoint, (key = `${this.ownOf(endpoint).key}\u0002${namespace}`));
    }
    return key;
  }
}

/** One object of an input for the comparison (built for every object: no spread copies). */
interface Keyed {
  readonly object: string;
  readonly key: string;
  readonly location: SourceLocation | undefined;
  readonly fields: Record<string, string> | undefined;
}

function compare(before: readonly Keyed[], after: readonly Keyed[]): ObjectChange[] {
  const old = new Map<string, Keyed>();
  for (const k of before) old.set(k.object, k);
  const changes: ObjectChange[] = [];
  for (const next of after) {
    const previous = old.get(next.object);
    old.delete(next.object);
    if (previous && previous.key === next.key) continue;
    const where = next.location ? { location: next.location } : {};
    if (!previous) changes.push({ object: next.object, change: 'added', ...where });
    else {
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

function keyed(cluster: Cluster, fieldKeys: EndpointFieldKeys, keyOf: (o: object) => string): Keyed[] {
  const result: Keyed[] = [];
  for (const p of cluster.policies)
    result.push({ object: networkPolicyObject(p), key: keyOf(p), location: p.location, fields: undefined });
  for (const p of cluster.clusterPolicies)
    result.push({ object: clusterPolicyObject(p), key: keyOf(p), location: p.location, fields: undefined });
  for (const ns of cluster.namespaces.values()) {
    const fields = { labels: contentKey(ns.labels), DefaultDeny: ns.legacyIngressIsolation ?? '' };
    result.push({ object: `Namespace ${ns.name}`, key: contentKey(fields), fields, location: ns.location });
  }
  for (const e of cluster.endpoints) {
    // Namespace labels are reported on the Namespace; here only the endpoint's own fields.
    const { fields, key } = fieldKeys.ownOf(e);
    result.push({ object: endpointObject(e), key, fields, location: e.location });
  }
  for (const node of cluster.nodes.values()) {
    const fields = { labels: contentKey(node.labels), addresses: node.addresses.map(formatIp).join(',') };
    result.push({ object: `Node ${node.name}`, key: contentKey(fields), fields, location: undefined });
  }
  return result;
}

/**
 * Every object added, removed or modified, in the order: new input's objects, then removed ones.
 * `keys` gives each input's endpoint fields and each policy's content key when the caller reads
 * them again (a diff does); computed here otherwise.
 */
export function objectChanges(
  before: Cluster,
  after: Cluster,
  keys?: {
    readonly before: EndpointFieldKeys;
    readonly after: EndpointFieldKeys;
    readonly policy: (policy: object) => string;
  },
): ObjectChange[] {
  const policy = keys?.policy ?? contentKey;
  return compare(
    keyed(before, keys?.before ?? new EndpointFieldKeys(before), policy),
    keyed(after, keys?.after ?? new EndpointFieldKeys(after), policy),
  );
}
