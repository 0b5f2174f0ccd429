/**
 * Endpoints kept current as pods and workloads come and go one by one — what `buildCluster`
 * decides for a whole input (a pod's top-level workload, which workload templates stand for
 * pods of their own, `ns/name[Kind]` ids where names collide), decided again only for the
 * objects a change can affect:
 *
 * - a changed object itself;
 * - for a changed workload, the objects whose owner walk passed it (indexed by workload key);
 * - the templates under a top workload whose pod count went to or from zero;
 * - the endpoints whose `ns/name` another endpoint took or gave up (their ids).
 *
 * One instance per namespace (owner references never cross namespaces). The rules themselves
 * are ingest's (`topWorkload`, `templateStandsAlone`, `endpointId`), so both paths agree by
 * construction; a property test holds this index to `buildCluster` over random histories.
 */
import { endpointId, templateStandsAlone, topWorkload, workloadKey } from '../ingest/index.ts';
import type { Endpoint, WorkloadRef } from '../model/types.ts';

/** A pod or workload as decoded: the endpoint without its id, and the controller it names. */
export interface EndpointSource {
  readonly endpoint: Omit<Endpoint, 'id'>;
  readonly owner?: WorkloadRef;
}

/** What a batch did to the namespace's endpoints: ids to delete first, then endpoints to upsert. */
interface EndpointChanges {
  readonly deleted: string[];
  readonly upserted: Endpoint[];
}

interface Entry {
  readonly source: EndpointSource;
  /** The top-level workload (pods with an owner, every template); undefined for a pod without one. */
  top: WorkloadRef | undefined;
  /** Workload keys the owner walk passed. */
  chain: string[];
  /** What the pipeline holds for this object (undefined: nothing). */
  emitted: Endpoint | undefined;
}

const isPod = (source: EndpointSource): boolean => source.endpoint.kind === 'Pod';

export class NamespaceEndpoints {
  /** By `Kind/name`. */
  private readonly entries = new Map<string, Entry>();
  /** Workload key → objects whose owner walk passed it. */
  private readonly walkedThrough = new Map<string, Set<string>>();
  /** Top workload key → pods attributed to it. */
  private readonly podsByTop = new Map<string, number>();
  /** Top workload key → templates whose top it is. */
  private readonly templatesByTop = new Map<string, Set<string>>();
  /** `name` → objects emitted under it (for ids). */
  private readonly emittedByName = new Map<string, Set<string>>();

  constructor(readonly namespace: string) {}

  get size(): number {
    return this.entries.size;
  }

  /** Every endpoint the pipeline holds for this namespace. */
  *endpoints(): IterableIterator<Endpoint> {
    for (const entry of this.entries.values()) if (entry.emitted) yield entry.emitted;
  }

  /**
   * Applies a batch: each `Kind/name` set to its new source, or removed (undefined). Returns the
   * endpoint changes that bring the pipeline from what it held to what the namespace holds now.
   */
  update(batch: ReadonlyMap<string, EndpointSource | undefined>): EndpointChanges {
    const dirty = new Set<string>();
    const removed: [string, Entry][] = [];
    const tops = new Set<string>();
    for (const [key, source] of batch) {
      const before = this.entries.get(key);
      if (before) {
        this.unindex(key, before, tops);
        if (!source) removed.push([key, before]);
      }
      if (source) this.entries.set(key, { source, top: undefined, chain: [], emitted: before?.emitted });
      else this.entries.delete(key);
      dirty.add(key);
      // Objects whose walk passed this workload may now end elsewhere.
      const through = this.walkedThrough.get(workloadKey(this.namespace, ...splitKey(key)));
      if (through) for (const k of through) dirty.add(k);
    }
    for (const key of dirty) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      if (!batch.has(key)) this.unindex(key, entry, tops);
      this.resolve(entry);
      this.index(key, entry, tops);
    }
    // Templates under a top whose pods came or went (or that itself came or went).
    const candidates = new Set(dirty);
    for (const top of tops) for (const key of this.templatesByTop.get(top) ?? []) candidates.add(key);

    const deleted: string[] = [];
    const names = new Set<string>();
    for (const [key, entry] of removed) {
      if (!entry.emitted) continue;
      deleted.push(entry.emitted.id);
      this.unname(entry.source.endpoint.name, key, names);
    }
    const wanted = new Map<string, Omit<Endpoint, 'id'> | undefined>();
    for (const key of candidates) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      const endpoint = this.wanted(entry);
      wanted.set(key, endpoint);
      const name = entry.source.endpoint.name;
      if (endpoint && !entry.emitted) this.name(name, key, names);
      else if (!endpoint && entry.emitted) this.unname(name, key, names);
    }
    // Ids depend on how many endpoints share a name: every emitted endpoint of a touched name.
    for (const name of names)
      for (const key of this.emittedByName.get(name) ?? [])
        if (!wanted.has(key)) wanted.set(key, this.wanted(this.entries.get(key)!));

    const upserted: Endpoint[] = [];
    for (const [key, endpoint] of wanted) {
      const entry = this.entries.get(key)!;
      const before = entry.emitted;
      const after = endpoint
        ? withId(endpoint, endpointId(endpoint, this.emittedByName.get(endpoint.name)?.size ?? 1))
        : undefined;
      if (before && (!after || before.id !== after.id)) deleted.push(before.id);
      if (after && !(before && sameEndpoint(before, after))) upserted.push(after);
      entry.emitted = after && before && sameEndpoint(before, after) ? before : after;
    }
    return { deleted, upserted };
  }

  /** The owner walk of one object. */
  private resolve(entry: Entry): void {
    const { endpoint, owner } = entry.source;
    const chain: string[] = [];
    if (owner) {
      entry.top = topWorkload(
        this.namespace,
        owner,
        endpoint.labels,
        (key) => this.present(key),
        (key) => chain.push(key),
      );
    } else {
      entry.top = endpoint.kind === 'Pod' ? undefined : { kind: endpoint.kind, name: endpoint.name };
    }
    entry.chain = chain;
  }

  /** A workload object of this namespace, as the owner walk sees it. */
  private present(key: string): { owner: WorkloadRef | undefined } | undefined {
    const [kind, name] = splitWorkloadKey(key, this.namespace);
    if (kind === 'Pod') return undefined;
    const entry = this.entries.get(`${kind}/${name}`);
    return entry ? { owner: entry.source.owner } : undefined;
  }

  /** The endpoint the pipeline should hold for an object, or undefined (a template pods stand for). */
  private wanted(entry: Entry): Omit<Endpoint, 'id'> | undefined {
    const { endpoint } = entry.source;
    if (isPod(entry.source)) return entry.top ? { ...endpoint, workload: entry.top } : endpoint;
    const top = entry.top!;
    const topKey = this.topKey(top);
    const standsAlone = templateStandsAlone(
      endpoint,
      top,
      (this.podsByTop.get(topKey) ?? 0) > 0,
      this.present(topKey) !== undefined,
    );
    return standsAlone ? { ...endpoint, workload: top } : undefined;
  }

  private topKey(top: WorkloadRef): string {
    return workloadKey(this.namespace, top.kind, top.name);
  }

  private index(key: string, entry: Entry, tops: Set<string>): void {
    for (const k of entry.chain) addTo(this.walkedThrough, k, key);
    if (!entry.top) return;
    const top = this.topKey(entry.top);
    if (isPod(entry.source)) {
      const count = this.podsByTop.get(top) ?? 0;
      this.podsByTop.set(top, count + 1);
      if (count === 0) tops.add(top);
    } else {
      addTo(this.templatesByTop, top, key);
    }
  }

  private unindex(key: string, entry: Entry, tops: Set<string>): void {
    for (const k of entry.chain) removeFrom(this.walkedThrough, k, key);
    if (!entry.top) return;
    const top = this.topKey(entry.top);
    if (isPod(entry.source)) {
      const count = (this.podsByTop.get(top) ?? 1) - 1;
      if (count === 0) {
        this.podsByTop.delete(top);
        tops.add(top);
      } else this.podsByTop.set(top, count);
    } else {
      removeFrom(this.templatesByTop, top, key);
    }
    entry.top = undefined;
    entry.chain = [];
  }

  private name(name: string, key: string, touched: Set<string>): void {
    addTo(this.emittedByName, name, key);
    touched.add(name);
  }

  private unname(name: string, key: string, touched: Set<string>): void {
    removeFrom(this.emittedByName, name, key);
    touched.add(name);
  }
}

/** `Kind/name` → [kind, name]. */
function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}

/** `namespace/Kind/name` (this namespace) → [kind, name]. */
function splitWorkloadKey(key: string, namespace: string): [string, string] {
  return splitKey(key.slice(namespace.length + 1));
}

function withId(endpoint: Omit<Endpoint, 'id'>, id: string): Endpoint {
  return { id, ...endpoint };
}

/** Same content: the same decoded object under the same id and workload. */
function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  return (
    a.id === b.id &&
    a.labels === b.labels &&
    a.ips === b.ips &&
    a.ports === b.ports &&
    a.node === b.node &&
    a.hostNetwork === b.hostNetwork &&
    // A pod deleted and made again under its name is another pod (Neutron finds ports by uid).
    a.uid === b.uid &&
    a.workload?.kind === b.workload?.kind &&
    a.workload?.name === b.workload?.name
  );
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
