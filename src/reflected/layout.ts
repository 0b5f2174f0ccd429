/**
 * The key layout in etcd, version 1 — a contract with every consumer (the node agent):
 *
 *   <root>/v1/k8s/<kind>/<namespace>/<name>   namespaced objects (pod, networkpolicy, deployment…)
 *   <root>/v1/k8s/<kind>/<name>               cluster-scoped objects (namespace, node, the cluster policies)
 *   <root>/v1/meta/reflector/leader           the leading reflector's id, bound to its lease
 *   <root>/v1/meta/reflector/resource-versions/<kind>[/<namespace>]
 *                                             the last Kubernetes resourceVersion applied for a list/watch
 *
 * `<root>` defaults to `/palisade`; `<kind>` is the kind in lower case. Values under `k8s/` are
 * the objects reduced to what policy reads, as JSON (see prune.ts and codec.ts). A change to
 * either the keys or the values' meaning gets a new version segment, so old readers never
 * misread new data.
 */
import type { ReflectedKind } from './types.ts';

const LAYOUT_VERSION = 'v1';
export const DEFAULT_ROOT = '/palisade';

/** The kinds reflected, with their key segment and scope. */
export const REFLECTED_KINDS: readonly ReflectedKind[] = [
  ['Namespace', false],
  ['Node', false],
  ['Pod', true],
  ['NetworkPolicy', true],
  ['AdminNetworkPolicy', false],
  ['BaselineAdminNetworkPolicy', false],
  ['ClusterNetworkPolicy', false],
  ['Deployment', true],
  ['ReplicaSet', true],
  ['StatefulSet', true],
  ['DaemonSet', true],
  ['ReplicationController', true],
  ['Job', true],
  ['CronJob', true],
].map(([kind, namespaced]) => ({
  kind: kind as string,
  segment: (kind as string).toLowerCase(),
  namespaced: namespaced as boolean,
}));

const BY_KIND = new Map(REFLECTED_KINDS.map((k) => [k.kind, k]));
const BY_SEGMENT = new Map(REFLECTED_KINDS.map((k) => [k.segment, k]));

/** Keys under one root. */
export class KeyLayout {
  /** `<root>` without a trailing slash. */
  readonly root: string;
  /** `<root>/v1/` */
  readonly base: string;
  /** Every reflected object: `<root>/v1/k8s/`. */
  readonly objects: string;
  readonly leader: string;
  readonly resourceVersions: string;
  /** Election keys of cluster-wide controllers (the Neutron controller): `<root>/v1/meta/controllers/`. */
  readonly controllers: string;

  constructor(root: string = DEFAULT_ROOT) {
    const trimmed = root.replace(/\/+$/, '');
    this.root = trimmed;
    this.base = `${trimmed}/${LAYOUT_VERSION}/`;
    this.objects = `${this.base}k8s/`;
    this.leader = `${this.base}meta/reflector/leader`;
    this.resourceVersions = `${this.base}meta/reflector/resource-versions/`;
    this.controllers = `${this.base}meta/controllers/`;
  }

  /** The key the controllers of a cluster-wide datapath campaign under. */
  controllerLeader(datapath: string): string {
    return `${this.controllers}${datapath}/leader`;
  }

  /** The prefix of one kind's keys. */
  kindPrefix(kind: string): string {
    return `${this.objects}${segmentOf(kind)}/`;
  }

  /** Whether a reflected kind's keys carry a namespace (undefined: not a reflected kind). */
  namespaced(kind: string): boolean | undefined {
    return BY_KIND.get(kind)?.namespaced;
  }

  /** The key of one object (namespace ignored for cluster-scoped kinds). */
  key(kind: string, namespace: string | undefined, name: string): string {
    const k = BY_KIND.get(kind);
    if (!k) throw new Error(`${kind} is not a reflected kind`);
    return k.namespaced
      ? `${this.objects}${k.segment}/${namespace ?? 'default'}/${name}`
      : `${this.objects}${k.segment}/${name}`;
  }

  /** The object a key names, or undefined for keys outside `k8s/` or of unknown kinds. */
  parse(key: string): { kind: string; namespace?: string; name: string } | undefined {
    if (!key.startsWith(this.objects)) return undefined;
    const parts = key.slice(this.objects.length).split('/');
    const k = BY_SEGMENT.get(parts[0]!);
    if (!k) return undefined;
    if (k.namespaced && parts.length === 3) return { kind: k.kind, namespace: parts[1]!, name: parts[2]! };
    if (!k.namespaced && parts.length === 2) return { kind: k.kind, name: parts[1]! };
    return undefined;
  }

  /** Where the last applied resourceVersion of a list/watch (a kind, maybe one namespace) is kept. */
  resourceVersionKey(kind: string, namespace?: string): string {
    return `${this.resourceVersions}${segmentOf(kind)}${namespace !== undefined ? `/${namespace}` : ''}`;
  }
}

function segmentOf(kind: string): string {
  const k = BY_KIND.get(kind);
  if (!k) throw new Error(`${kind} is not a reflected kind`);
  return k.segment;
}
