/**
 * The fake API server's state: objects per resource, one global resourceVersion counter (as the
 * real server takes it from etcd's revision), an event log that watches replay from, and a
 * compaction point below which a watch or a list continuation is answered with 410 Gone.
 */

/** A resource the fake serves (the API's own names; independent of Palisade's catalogue). */
export interface FakeResource {
  readonly kind: string;
  readonly group: string; // '' for the core group
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export const FAKE_RESOURCES: readonly FakeResource[] = [
  { kind: 'Namespace', group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  { kind: 'Node', group: '', version: 'v1', plural: 'nodes', namespaced: false },
  { kind: 'Pod', group: '', version: 'v1', plural: 'pods', namespaced: true },
  {
    kind: 'ReplicationController',
    group: '',
    version: 'v1',
    plural: 'replicationcontrollers',
    namespaced: true,
  },
  {
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    namespaced: true,
  },
  { kind: 'Deployment', group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  { kind: 'StatefulSet', group: 'apps', version: 'v1', plural: 'statefulsets', namespaced: true },
  { kind: 'DaemonSet', group: 'apps', version: 'v1', plural: 'daemonsets', namespaced: true },
  { kind: 'ReplicaSet', group: 'apps', version: 'v1', plural: 'replicasets', namespaced: true },
  { kind: 'Job', group: 'batch', version: 'v1', plural: 'jobs', namespaced: true },
  { kind: 'CronJob', group: 'batch', version: 'v1', plural: 'cronjobs', namespaced: true },
  {
    kind: 'AdminNetworkPolicy',
    group: 'policy.networking.k8s.io',
    version: 'v1alpha1',
    plural: 'adminnetworkpolicies',
    namespaced: false,
  },
  {
    kind: 'BaselineAdminNetworkPolicy',
    group: 'policy.networking.k8s.io',
    version: 'v1alpha1',
    plural: 'baselineadminnetworkpolicies',
    namespaced: false,
  },
  {
    kind: 'ClusterNetworkPolicy',
    group: 'policy.networking.k8s.io',
    version: 'v1alpha2',
    plural: 'clusternetworkpolicies',
    namespaced: false,
  },
];

/** One stored object: its JSON without kind/apiVersion (as list items carry it), and its identity. */
interface Stored {
  readonly namespace: string;
  readonly name: string;
  readonly rv: number;
  readonly uid: string;
  /** `{"metadata":…,…}` without kind and apiVersion: list items are written exactly so. */
  readonly itemJson: string;
}

export interface LoggedEvent {
  readonly rv: number;
  readonly resource: FakeResource;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly namespace: string;
  readonly stored: Stored;
}

export type EventListener = (event: LoggedEvent) => void;

export class FakeStore {
  private revision = 1000;
  /** Watches from a version below this are answered 410 Gone. */
  private compactedBelow = 1000;
  private readonly objects = new Map<FakeResource, Map<string, Stored>>();
  private log: LoggedEvent[] = [];
  private readonly listeners = new Set<EventListener>();
  private uid = 0;
  /** Resources (by plural) answered 404, as a cluster without the CRD installed. */
  readonly absent = new Set<string>();

  constructor(
    readonly resources: readonly FakeResource[] = FAKE_RESOURCES,
    /** Events kept for watches to replay; older ones are compacted away. */
    private readonly logLimit = 200_000,
  ) {
    for (const r of resources) this.objects.set(r, new Map());
  }

  get resourceVersion(): number {
    return this.revision;
  }

  get compactedRevision(): number {
    return this.compactedBelow;
  }

  resourceFor(kind: string): FakeResource {
    const resource = this.resources.find((r) => r.kind === kind);
    if (!resource) throw new Error(`the fake API server does not serve ${kind}`);
    return resource;
  }

  /** Creates or replaces an object (kind and metadata.name required). Returns its new resourceVersion. */
  apply(object: Record<string, unknown>): number {
    const resource = this.resourceFor(String(object.kind));
    const metadata = { ...((object.metadata ?? {}) as Record<string, unknown>) };
    const name = String(metadata.name);
    const namespace = resource.namespaced ? ((metadata.namespace as string | undefined) ?? 'default') : '';
    const map = this.objects.get(resource)!;
    const key = `${namespace}/${name}`;
    const previous = map.get(key);
    const rv = ++this.revision;
    metadata.resourceVersion = String(rv);
    if (resource.namespaced) metadata.namespace = namespace;
    const uid = previous?.uid ?? `uid-${++this.uid}`;
    metadata.uid = uid;
    // kind and apiVersion are left out of the stored item and written by lists and watches.
    const item: Record<string, unknown> = { metadata };
    for (const [k, v] of Object.entries(object))
      if (k !== 'kind' && k !== 'apiVersion' && k !== 'metadata') item[k] = v;
    const stored: Stored = { namespace, name, rv, uid, itemJson: JSON.stringify(item) };
    map.set(key, stored);
    this.record({ rv, resource, type: previous ? 'MODIFIED' : 'ADDED', namespace, stored });
    return rv;
  }

  /** Deletes an object; returns false when it did not exist. */
  remove(kind: string, namespace: string | undefined, name: string): boolean {
    const resource = this.resourceFor(kind);
    const ns = resource.namespaced ? (namespace ?? 'default') : '';
    const map = this.objects.get(resource)!;
    const previous = map.get(`${ns}/${name}`);
    if (!previous) return false;
    map.delete(`${ns}/${name}`);
    const rv = ++this.revision;
    // A DELETED event carries the object's last state with the deletion's resourceVersion.
    const item = JSON.parse(previous.itemJson) as { metadata: Record<string, unknown> };
    item.metadata.resourceVersion = String(rv);
    const stored: Stored = { namespace: ns, name, rv, uid: previous.uid, itemJson: JSON.stringify(item) };
    this.record({ rv, resource, type: 'DELETED', namespace: ns, stored });
    return true;
  }

  /** Forgets every event so far: a watch or list continuation from an older version gets 410. */
  compact(): void {
    this.compactedBelow = this.revision;
    this.log = [];
  }

  /** A consistent snapshot of one resource (optionally one namespace), sorted by namespace/name. */
  snapshot(resource: FakeResource, namespace: string | undefined): { items: Stored[]; rv: number } {
    const items: Stored[] = [];
    for (const stored of this.objects.get(resource)!.values()) {
      if (namespace === undefined || stored.namespace === namespace) items.push(stored);
    }
    items.sort((a, b) => (a.namespace + '/' + a.name < b.namespace + '/' + b.name ? -1 : 1));
    return { items, rv: this.revision };
  }

  get(resource: FakeResource, namespace: string, name: string): Stored | undefined {
    return this.objects.get(resource)!.get(`${resource.namespaced ? namespace : ''}/${name}`);
  }

  /** Events after `rv` for a resource (and namespace), or 'gone' when they were compacted away. */
  eventsSince(resource: FakeResource, namespace: string | undefined, rv: number): LoggedEvent[] | 'gone' {
    if (rv < this.compactedBelow) return 'gone';
    return this.log.filter(
      (e) => e.rv > rv && e.resource === resource && (namespace === undefined || e.namespace === namespace),
    );
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private record(event: LoggedEvent): void {
    this.log.push(event);
    if (this.log.length > this.logLimit) {
      const dropped = this.log.length - this.logLimit;
      this.compactedBelow = this.log[dropped - 1]!.rv;
      this.log = this.log.slice(dropped);
    }
    for (const listener of this.listeners) listener(event);
  }
}

/** The JSON of an item with its kind and apiVersion put back in front (watch events carry them). */
export function withTypeMeta(resource: FakeResource, itemJson: string): string {
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  return `{"kind":${JSON.stringify(resource.kind)},"apiVersion":${JSON.stringify(apiVersion)},${itemJson.slice(1)}`;
}
