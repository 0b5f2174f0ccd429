/**
 * What analysis output lists as its rows: pods one by one (`--by pod`), or workloads (the
 * default, as netpol-analyzer does): the pods a workload owns, or its template while none runs,
 * reported as one row named `ns/name[Kind]`. A pod no workload owns is a row of its own either way.
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import { serviceBackends, serviceLabel } from './services.ts';
import type { MatrixRow } from './types.ts';

/** How endpoints become rows. */
export type EndpointView = 'workload' | 'pod';
export const ENDPOINT_VIEWS: readonly EndpointView[] = ['workload', 'pod'];
/**
 * Rows of a matrix for people: a view, or one row per namespace (`matrix --group-by namespace`,
 * `ns[Namespace]`: allowed where every pod pair of the two namespaces is) — for clusters whose
 * workload table would be wider than any terminal.
 */
export type RowGrouping = EndpointView | 'namespace' | 'service';
/** `matrix --by`: a view, or Services (`--by service`: the pods behind each Service as one row). */
export const MATRIX_VIEWS: readonly (EndpointView | 'service')[] = [...ENDPOINT_VIEWS, 'service'];

/** One row of output and the endpoints it stands for. */
export interface EndpointGroup extends MatrixRow {
  /** Pods of the workload (or its template), in cluster order; one endpoint in the pod view. */
  readonly members: readonly Endpoint[];
}

/** The row of one endpoint in the pod view: a pod by its name, a template as its workload. */
export function endpointRow(endpoint: Endpoint): MatrixRow {
  const { namespace, name, kind } = endpoint;
  return {
    label: kind === 'Pod' ? endpoint.id : `${namespace}/${name}[${kind}]`,
    id: `${namespace}/${name}`,
    kind,
    namespace,
  };
}

/**
 * Rows for `endpoints` in the given view, sorted by namespace, name and kind. By service: a row
 * per Service of `cluster` with the pods behind it (a pod behind two Services is in both rows),
 * and the pods behind none by their workload.
 */
export function groupEndpoints(
  endpoints: readonly Endpoint[],
  view: RowGrouping,
  cluster?: Cluster,
): EndpointGroup[] {
  if (view === 'pod') return endpoints.map((e) => ({ ...endpointRow(e), members: [e] }));
  if (view === 'namespace') return namespaceRows(endpoints);
  if (view === 'service') return serviceRows(endpoints, cluster);
  const groups = new Map<string, { row: MatrixRow; name: string; members: Endpoint[] }>();
  for (const endpoint of endpoints) {
    const { namespace } = endpoint;
    const kind = endpoint.workload?.kind ?? 'Pod';
    const name = endpoint.workload?.name ?? endpoint.name;
    const key = `${namespace}\u0000${name}\u0000${kind}`;
    let group = groups.get(key);
    if (!group) {
      const row = { label: `${namespace}/${name}[${kind}]`, id: `${namespace}/${name}`, kind, namespace };
      group = { row, name, members: [] };
      groups.set(key, group);
    }
    group.members.push(endpoint);
  }
  return [...groups.values()]
    .sort(
      (a, b) =>
        compare(a.row.namespace, b.row.namespace) ||
        compare(a.name, b.name) ||
        compare(a.row.kind, b.row.kind),
    )
    .map(({ row, members }) => ({ ...row, members }));
}

function serviceRows(endpoints: readonly Endpoint[], cluster: Cluster | undefined): EndpointGroup[] {
  const inView = new Set(endpoints);
  const behind = new Set<Endpoint>();
  const rows: EndpointGroup[] = [];
  for (const service of cluster?.services ?? []) {
    const members = serviceBackends(cluster as Cluster, service).filter((e) => inView.has(e));
    if (members.length === 0) continue;
    for (const e of members) behind.add(e);
    rows.push({
      label: serviceLabel(service),
      id: `${service.namespace}/${service.name}`,
      kind: 'Service',
      namespace: service.namespace,
      members,
    });
  }
  const rest = groupEndpoints(
    endpoints.filter((e) => !behind.has(e)),
    'workload',
  );
  return [...rows, ...rest].sort(
    (a, b) => compare(a.namespace, b.namespace) || compare(a.id, b.id) || compare(a.kind, b.kind),
  );
}

function namespaceRows(endpoints: readonly Endpoint[]): EndpointGroup[] {
  const members = new Map<string, Endpoint[]>();
  for (const endpoint of endpoints) {
    const list = members.get(endpoint.namespace);
    if (list) list.push(endpoint);
    else members.set(endpoint.namespace, [endpoint]);
  }
  return [...members.keys()].sort(compare).map((namespace) => ({
    label: `${namespace}[Namespace]`,
    id: namespace,
    kind: 'Namespace',
    namespace,
    members: members.get(namespace) as Endpoint[],
  }));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
