/**
 * What changed between two inputs, object by object: policies (by content, wherever they sit in
 * the files), namespaces' labels, endpoints' labels, addresses and ports, nodes. Objects are
 * matched by identity (`Kind ns/name`); content keys ignore source locations, so moving a policy
 * to another file is no change.
 */
import { clusterPolicyObjectName } from '../../model/cluster-policy.ts';
import type {
  Cluster,
  ClusterPolicy,
  Endpoint,
  Namespace,
  NetworkPolicy,
  NodeInfo,
  SourceLocation,
} from '../../model/types.ts';
import { formatIp } from '../../net/ip.ts';
import type { ObjectChange } from './types.ts';

/** An object's identity in its cluster, not its content: the same policy read from the API and from a file differ only in these. */
export const IDENTITY_FIELDS: ReadonlySet<string> = new Set(['uid', 'generation']);

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
    if (key === undefined)
      this.keys.set(
        endpoint,
        (key = `${this.ownOf(endpoint).key}\u0002${this.namespaceKeyOf(endpoint.namespace)}`),
      );
    return key;
  }

  /** The labels of a namespace as one comparable string. */
  namespaceKeyOf(namespace: string): string {
    let key = this.namespaceKeys.get(namespace);
    if (key === undefined) {
      key = labelsKey(this.cluster.namespaces.get(namespace)?.labels ?? {});
      this.namespaceKeys.set(namespace, key);
    }
    return key;
  }
}

/** One kind of object of both inputs, as the comparison reads it. */
interface ObjectKind<T> {
  readonly before: readonly T[];
  readonly after: readonly T[];
  /** The object's identity: `Kind ns/name`. */
  readonly name: (object: T) => string;
  /** Its content: equal keys, no change. */
  readonly key: (object: T, input: EndpointFieldKeys) => string;
  /** Its fields, to name the ones a modification changed (endpoints, namespaces, nodes). */
  readonly fields?: (object: T, input: EndpointFieldKeys) => Record<string, string>;
  readonly location: (object: T) => SourceLocation | undefined;
  /**
   * The order both inputs' lists are in when read from a cluster (ingest sorts them): then the
   * two are walked side by side rather than one kept in a map by name (at 100,000 pods, a map of
   * every endpoint's and policy's name was most of the comparison).
   */
  readonly order?: (a: T, b: T) => number;
}

/** What changed, and which objects of a kind were added, removed or modified. */
interface KindChanges<T> {
  readonly changes: ObjectChange[];
  readonly removed: ObjectChange[];
  readonly touched: T[];
}

function changesOfKind<T>(
  kind: ObjectKind<T>,
  keys: { readonly before: EndpointFieldKeys; readonly after: EndpointFieldKeys },
): KindChanges<T> {
  const result: KindChanges<T> = { changes: [], removed: [], touched: [] };
  const where = (o: T): { location?: SourceLocation } => {
    const location = kind.location(o);
    return location ? { location } : {};
  };
  const pair = (previous: T | undefined, next: T | undefined): void => {
    if (next === undefined) {
      if (previous === undefined) return;
      result.removed.push({ object: kind.name(previous), change: 'removed', ...where(previous) });
      result.touched.push(previous);
      return;
    }
    if (previous === undefined) {
      result.changes.push({ object: kind.name(next), change: 'added', ...where(next) });
      result.touched.push(next);
      return;
    }
    if (kind.key(previous, keys.before) === kind.key(next, keys.after)) return;
    const was = kind.fields?.(previous, keys.before);
    const is = kind.fields?.(next, keys.after);
    const fields = was && is ? Object.keys(is).filter((f) => was[f] !== is[f]) : undefined;
    result.changes.push({
      object: kind.name(next),
      change: 'modified',
      ...(fields ? { fields } : {}),
      ...where(next),
    });
    result.touched.push(previous, next);
  };
  const order = kind.order;
  if (order && sortedStrictly(kind.before, order) && sortedStrictly(kind.after, order)) {
    let i = 0;
    for (const next of kind.after) {
      while (i < kind.before.length && order(kind.before[i] as T, next) < 0)
        pair(kind.before[i++], undefined);
      if (i < kind.before.length && order(kind.before[i] as T, next) === 0) pair(kind.before[i++], next);
      else pair(undefined, next);
    }
    while (i < kind.before.length) pair(kind.before[i++], undefined);
    return result;
  }
  const old = new Map<string, T>();
  for (const o of kind.before) old.set(kind.name(o), o);
  for (const next of kind.after) {
    const name = kind.name(next);
    const previous = old.get(name);
    old.delete(name);
    pair(previous, next);
  }
  for (const gone of old.values()) pair(gone, undefined);
  return result;
}

/** Whether `list` is in `order` with no two equal. */
export function sortedStrictly<T>(list: readonly T[], order: (a: T, b: T) => number): boolean {
  for (let i = 1; i < list.length; i++) if (order(list[i - 1] as T, list[i] as T) >= 0) return false;
  return true;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The order ingest gives NetworkPolicies: by namespace, then name. */
export const byNamespaceAndName = (a: NetworkPolicy, b: NetworkPolicy): number =>
  byText(a.namespace, b.namespace) || byText(a.name, b.name);

interface ObjectAndEndpointChanges {
  readonly objects: ObjectChange[];
  /** The endpoints (of either input) that were added, removed or modified. */
  readonly endpoints: ReadonlySet<Endpoint>;
  /** Namespaces where the Namespace or a NetworkPolicy was added, removed or modified. */
  readonly namespaces: ReadonlySet<string>;
}

/**
 * Every object added, removed or modified, in the order: new input's objects (policies, cluster
 * policies, namespaces, endpoints, nodes), then removed ones; the endpoints of either input
 * among them, and the namespaces where a NetworkPolicy or the Namespace itself changed. `keys` gives each input's endpoint fields and each policy's content key when the
 * caller reads them again (a diff does); computed here otherwise.
 */
export function objectAndEndpointChanges(
  before: Cluster,
  after: Cluster,
  keys?: {
    readonly before: EndpointFieldKeys;
    readonly after: EndpointFieldKeys;
    readonly policy: (policy: object) => string;
  },
): ObjectAndEndpointChanges {
  const policyKey = keys?.policy ?? contentKey;
  const inputs = {
    before: keys?.before ?? new EndpointFieldKeys(before),
    after: keys?.after ?? new EndpointFieldKeys(after),
  };
  const namespaceFields = (ns: Namespace): Record<string, string> => ({
    labels: contentKey(ns.labels),
    DefaultDeny: ns.legacyIngressIsolation ?? '',
  });
  const nodeFields = (node: NodeInfo): Record<string, string> => ({
    labels: contentKey(node.labels),
    addresses: node.addresses.map(formatIp).join(','),
  });
  const endpoints = changesOfKind<Endpoint>(
    {
      before: before.endpoints,
      after: after.endpoints,
      name: endpointObject,
      // Namespace labels are reported on the Namespace; here only the endpoint's own fields.
      key: (e, input) => input.ownOf(e).key,
      fields: (e, input) => input.ownOf(e).fields,
      location: (e) => e.location,
      order: (a, b) => byText(a.namespace, b.namespace) || byText(a.name, b.name) || byText(a.kind, b.kind),
    },
    inputs,
  );
  const kinds = [
    changesOfKind<NetworkPolicy>(
      {
        before: before.policies,
        after: after.policies,
        name: networkPolicyObject,
        key: policyKey,
        location: (p) => p.location,
        order: byNamespaceAndName,
      },
      inputs,
    ),
    changesOfKind<ClusterPolicy>(
      {
        before: before.clusterPolicies,
        after: after.clusterPolicies,
        name: clusterPolicyObject,
        key: policyKey,
        location: (p) => p.location,
      },
      inputs,
    ),
    changesOfKind<Namespace>(
      {
        before: [...before.namespaces.values()],
        after: [...after.namespaces.values()],
        name: (ns) => `Namespace ${ns.name}`,
        key: (ns) => contentKey(namespaceFields(ns)),
        fields: namespaceFields,
        location: (ns) => ns.location,
      },
      inputs,
    ),
    endpoints,
    changesOfKind<NodeInfo>(
      {
        before: [...before.nodes.values()],
        after: [...after.nodes.values()],
        name: (node) => `Node ${node.name}`,
        key: (node) => contentKey(nodeFields(node)),
        fields: nodeFields,
        location: () => undefined,
      },
      inputs,
    ),
  ];
  const [policies, , namespaces] = kinds as [
    KindChanges<NetworkPolicy>,
    KindChanges<ClusterPolicy>,
    KindChanges<Namespace>,
  ];
  return {
    objects: [...kinds.flatMap((k) => k.changes), ...kinds.flatMap((k) => k.removed)],
    endpoints: new Set(endpoints.touched),
    namespaces: new Set([
      ...policies.touched.map((p) => p.namespace),
      ...namespaces.touched.map((ns) => ns.name),
    ]),
  };
}
