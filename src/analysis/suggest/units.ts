/**
 * The units a suggestion writes policy for: workloads (pods grouped as `matrix` groups its rows),
 * each selected by the fewest labels a person would pick — `app.kubernetes.io/name`, `app`,
 * `k8s-app` first — that select exactly its pods in its namespace. Where no labels do (two
 * workloads with the same labels, pods without labels), the workloads that cannot be told apart
 * become one unit under their common labels: the policy then covers all of them, and the
 * generalisation is reported. Selections are computed from `key=value` posting lists, so a unit
 * costs its candidate labels' lists, not a scan of the namespace per label.
 */
import type { Endpoint, Labels } from '../../model/types.ts';
import { compareStrings } from '../../model/selector.ts';
import { groupEndpoints } from '../workload-view.ts';
import type { Unit } from './types.ts';

/** Labels a controller sets per pod or per revision: never what a person selects a workload by. */
const VOLATILE = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'pod-template-generation',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'controller-uid',
  'batch.kubernetes.io/controller-uid',
  'job-name',
  'batch.kubernetes.io/job-name',
  'batch.kubernetes.io/job-completion-index',
]);

/** Keys people select workloads by, best first; other common keys follow alphabetically. */
const PREFERRED = [
  'app.kubernetes.io/name',
  'app',
  'k8s-app',
  'name',
  'app.kubernetes.io/instance',
  'app.kubernetes.io/component',
  'component',
  'tier',
  'role',
];

interface Units {
  readonly units: readonly Unit[];
  /** The unit of each endpoint given (hostNetwork pods have none: policy does not apply to them). */
  readonly unitOf: ReadonlyMap<Endpoint, Unit>;
}

/** Units for `endpoints` (hostNetwork pods are left out), namespace by namespace. */
export function buildUnits(endpoints: readonly Endpoint[]): Units {
  const byNamespace = new Map<string, Endpoint[]>();
  for (const e of endpoints) {
    if (e.hostNetwork) continue;
    const list = byNamespace.get(e.namespace);
    if (list) list.push(e);
    else byNamespace.set(e.namespace, [e]);
  }
  const units: Unit[] = [];
  const unitOf = new Map<Endpoint, Unit>();
  for (const namespace of [...byNamespace.keys()].sort()) {
    for (const unit of namespaceUnits(namespace, byNamespace.get(namespace) as Endpoint[], units.length)) {
      units.push(unit);
      for (const m of unit.members) unitOf.set(m, unit);
    }
  }
  return { units, unitOf };
}

interface Draft {
  workloads: string[];
  name: string;
  members: number[];
}

function namespaceUnits(namespace: string, pods: readonly Endpoint[], firstId: number): Unit[] {
  const postings = new Map<string, number[]>();
  pods.forEach((pod, i) => {
    for (const [key, value] of Object.entries(pod.labels)) {
      const k = `${key}=${value}`;
      const list = postings.get(k);
      if (list) list.push(i);
      else postings.set(k, [i]);
    }
  });
  const index = new Map(pods.map((p, i) => [p, i]));
  const owner = new Int32Array(pods.length);
  const drafts = new Map<number, Draft>();
  groupEndpoints(pods, 'workload').forEach((group, g) => {
    const members = group.members.map((m) => index.get(m) as number);
    for (const m of members) owner[m] = g;
    drafts.set(g, { workloads: [group.label], name: group.id.slice(namespace.length + 1), members });
  });
  const selectors = new Map<number, Labels>();
  const pending = [...drafts.keys()];
  while (pending.length) {
    const id = pending.pop() as number;
    const draft = drafts.get(id);
    if (!draft) continue; // merged into another meanwhile
    const { selector, selected } = chooseSelector(draft.members, pods, postings);
    const strangers = new Set<number>();
    for (const i of selected) if (owner[i] !== id) strangers.add(owner[i] as number);
    if (strangers.size === 0) {
      selectors.set(id, selector);
      continue;
    }
    // Labels cannot tell these workloads apart: one unit for all of them, chosen again.
    for (const other of strangers) {
      const merged = drafts.get(other) as Draft;
      draft.workloads.push(...merged.workloads);
      draft.members.push(...merged.members);
      for (const m of merged.members) owner[m] = id;
      drafts.delete(other);
      selectors.delete(other);
    }
    draft.workloads.sort();
    draft.members.sort((a, b) => a - b);
    pending.push(id);
  }
  return [...drafts.entries()]
    .sort(([, a], [, b]) => compareStrings(a.workloads[0] as string, b.workloads[0] as string))
    .map(([id, draft], i) => ({
      id: firstId + i,
      namespace,
      workloads: draft.workloads,
      name: draft.name,
      members: draft.members.map((m) => pods[m] as Endpoint),
      selector: selectors.get(id) as Labels,
    }));
}

/**
 * The labels to select `members` by: the best preferred key they all share, then — while the
 * selection holds other pods — the shared label that leaves fewest of them. Returns what the
 * selector selects (sorted indexes), which holds every member and, when no shared labels tell
 * them apart from some others, those too.
 */
function chooseSelector(
  members: readonly number[],
  pods: readonly Endpoint[],
  postings: ReadonlyMap<string, number[]>,
): { selector: Labels; selected: number[] } {
  const first = pods[members[0] as number] as Endpoint;
  const common = Object.entries(first.labels).filter(
    ([key, value]) => !VOLATILE.has(key) && members.every((m) => (pods[m] as Endpoint).labels[key] === value),
  );
  const rank = (key: string): number => {
    const r = PREFERRED.indexOf(key);
    return r < 0 ? PREFERRED.length : r;
  };
  common.sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  let selected = pods.map((_, i) => i);
  const selector: Record<string, string> = {};
  const left = [...common];
  // A person names the workload first (`app=web`), then narrows if that is not enough.
  const named = left[0];
  if (named && rank(named[0]) < PREFERRED.length) {
    left.shift();
    selector[named[0]] = named[1];
    selected = postings.get(`${named[0]}=${named[1]}`) ?? [];
  }
  while (selected.length > members.length && left.length) {
    // The first (best ranked) label among those that leave fewest pods.
    let best = -1;
    let bestSelected = selected;
    left.forEach(([key, value], i) => {
      const narrowed = intersect(selected, postings.get(`${key}=${value}`) ?? []);
      if (best < 0 || narrowed.length < bestSelected.length) {
        best = i;
        bestSelected = narrowed;
      }
    });
    if (bestSelected.length === selected.length) break;
    const [[key, value]] = left.splice(best, 1) as [[string, string]];
    selector[key] = value;
    selected = bestSelected;
  }
  return { selector, selected };
}

function intersect(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    if (x === y) {
      out.push(x);
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out;
}
