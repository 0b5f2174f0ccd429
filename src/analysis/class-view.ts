/**
 * The matrix printed per equivalence class (`matrix --by class`): endpoints that no policy can
 * tell apart get the same answer for every connection, so a class pair's line stands for every
 * pair of their members. A class is named compactly by its members — one pod or workload by its
 * name, several by their workloads or their names' common prefix (`shop/api-* (400 pods)`) — and
 * the JSON lists every member, so a script can expand it. Only the pairs that may connect are
 * listed, visiting only what each class reaches: the cost follows the answer.
 */
import type { Endpoint } from '../model/types.ts';
import type { PortSet } from '../semantics/index.ts';
import type { ClassAnswers, Matrix, PortQuery } from './types.ts';
import { endpointRow } from './workload-view.ts';

/** One class as the class outputs print it. */
export interface ClassRow {
  /** `c1`, `c2`… in the order printed. */
  readonly id: string;
  readonly label: string;
  readonly namespace: string;
  readonly members: readonly Endpoint[];
}

export interface ClassReport {
  /** Classes in the order printed (by namespace, then label). */
  readonly rows: readonly ClassRow[];
  readonly queries: readonly PortQuery[];
  /** Members of all classes. */
  readonly endpoints: number;
  /** Each class pair that may connect, in the order of `rows` (sources, then destinations). */
  pairs(): Iterable<{ readonly from: number; readonly to: number; readonly ports: PortSet }>;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The class report of a matrix computed per class (`Matrix.classes`). */
export function classReport(matrix: Matrix): ClassReport {
  const classes = matrix.classes;
  if (!classes) throw new Error('the matrix has no class answers');
  const { rows, classAtRow, rowOfClass } = classRows(
    matrix.endpoints,
    classes.classOf,
    classes.representatives.length,
  );
  return {
    rows,
    queries: matrix.queries,
    endpoints: matrix.endpoints.length,
    pairs: () => pairsInOrder(classes, classAtRow, rowOfClass),
  };
}

/** Classes as rows: their members, named compactly and apart, in the order printed. */
export interface ClassRows {
  readonly rows: readonly ClassRow[];
  /** The class number (as `classOf` numbers it) of each row. */
  readonly classAtRow: readonly number[];
  /** The row of each class number; -1 for a class with no member among the endpoints. */
  readonly rowOfClass: Int32Array;
}

/**
 * The rows of the classes `classOf` gives `endpoints` (numbers below `count`), sorted by
 * namespace, then label — what every per-class output prints (matrix, explain, lint, diff).
 */
export function classRows(endpoints: readonly Endpoint[], classOf: Int32Array, count: number): ClassRows {
  const members: Endpoint[][] = Array.from({ length: count }, () => []);
  endpoints.forEach((endpoint, i) => (members[classOf[i] as number] as Endpoint[]).push(endpoint));
  const order = distinctLabels(
    members.map((list, cls) => ({ cls, list, label: classLabel(list) })).filter((c) => c.list.length > 0),
  ).sort(
    (a, b) =>
      compare((a.list[0] as Endpoint).namespace, (b.list[0] as Endpoint).namespace) ||
      compare(a.label, b.label),
  );
  const rowOfClass = new Int32Array(count).fill(-1);
  order.forEach((c, row) => (rowOfClass[c.cls] = row));
  const rows: ClassRow[] = order.map((c, row) => ({
    id: `c${row + 1}`,
    label: c.label,
    namespace: (c.list[0] as Endpoint).namespace,
    members: c.list,
  }));
  return { rows, classAtRow: order.map((c) => c.cls), rowOfClass };
}

function* pairsInOrder(
  classes: ClassAnswers,
  classAtRow: readonly number[],
  rowOfClass: Int32Array,
): Iterable<{ from: number; to: number; ports: PortSet }> {
  for (let from = 0; from < classAtRow.length; from++) {
    const reached: { to: number; ports: PortSet }[] = [];
    classes.forEachReached(classAtRow[from] as number, (b, ports) => {
      const to = rowOfClass[b] as number;
      if (to >= 0) reached.push({ to, ports });
    });
    reached.sort((x, y) => x.to - y.to);
    for (const { to, ports } of reached) yield { from, to, ports };
  }
}

/**
 * A class's name: its one member's, or its members' compactly — one workload (`shop/api[Deployment]
 * (3 pods)`), a few (`shop/api[Deployment], web[Deployment] and 2 more (12 pods)`), or pods no
 * workload owns by their names' common prefix (`shop/api-* (400 pods)`).
 */
export function classLabel(members: readonly Endpoint[]): string {
  const first = members[0];
  if (!first) return '(empty)';
  if (members.length === 1) return endpointRow(first).label;
  const noun = members.every((m) => m.kind === 'Pod') ? 'pods' : 'endpoints';
  const count = ` (${members.length} ${noun})`;
  const workloads = new Map<string, number>();
  const lone: string[] = [];
  for (const m of members) {
    if (m.workload) {
      const key = `${m.workload.name}[${m.workload.kind}]`;
      workloads.set(key, (workloads.get(key) ?? 0) + 1);
    } else if (m.kind !== 'Pod')
      workloads.set(`${m.name}[${m.kind}]`, (workloads.get(`${m.name}[${m.kind}]`) ?? 0) + 1);
    else lone.push(m.name);
  }
  const parts = [...workloads.keys()].sort(compare);
  if (lone.length > 0) {
    const prefix = commonPrefix(lone);
    if (prefix.length >= 2) parts.push(`${prefix}*`);
    else parts.push(...lone.sort(compare));
  }
  const shown =
    parts.length <= 3 ? parts.join(', ') : `${parts.slice(0, 2).join(', ')} and ${parts.length - 2} more`;
  return `${first.namespace}/${shown}${count}`;
}

/**
 * Classes whose compact names collide (`default/pod-* (100 pods)` ten times, when a label such as
 * `shard` splits one set of names) are told apart by the labels their members share and the
 * others do not (`default/pod-* shard=s-3 (100 pods)`), or, where no label does (addresses or
 * named ports split them), by a number: a line must say which class it is about.
 */
function distinctLabels<T extends { readonly list: readonly Endpoint[]; label: string }>(classes: T[]): T[] {
  const byLabel = new Map<string, T[]>();
  for (const c of classes) {
    const same = byLabel.get(c.label);
    if (same) same.push(c);
    else byLabel.set(c.label, [c]);
  }
  for (const [label, same] of byLabel) {
    if (same.length < 2) continue;
    const shared = same.map((c) => sharedLabels(c.list));
    const told = same.map((_, i) =>
      [...(shared[i] as Map<string, string>)]
        .filter(([key, value]) => !shared.every((other) => other.get(key) === value))
        .map(([key, value]) => `${key}=${value}`)
        .sort(compare)
        .join(','),
    );
    const unique = new Set(told).size === same.length && told.every((t) => t !== '');
    const at = label.lastIndexOf(' (');
    same.forEach((c, i) => {
      const mark = unique ? (told[i] as string) : `#${i + 1}`;
      c.label = at < 0 ? `${label} ${mark}` : `${label.slice(0, at)} ${mark}${label.slice(at)}`;
    });
  }
  return classes;
}

/** The labels (key → value) every member has alike. */
function sharedLabels(members: readonly Endpoint[]): Map<string, string> {
  const shared = new Map(Object.entries(members[0]?.labels ?? {}));
  for (const m of members) for (const [key, value] of shared) if (m.labels[key] !== value) shared.delete(key);
  return shared;
}

function commonPrefix(names: readonly string[]): string {
  let prefix = names[0] ?? '';
  for (const name of names) {
    let i = 0;
    while (i < prefix.length && i < name.length && prefix[i] === name[i]) i++;
    prefix = prefix.slice(0, i);
  }
  return prefix;
}
