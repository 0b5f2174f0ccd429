/**
 * The units a diff compares — a workload's pods together, or pods one by one — as they are before
 * and after, and which of their sides may have changed: a side changed when the policies deciding
 * it differ by content for some member, or when the members' fields or the nodes did. Each side
 * also gathers the changed objects that reach it (its policies, its pods, its namespace): the
 * causes a changed connection names.
 */
import type { Cluster, Endpoint, Semantics } from '../../model/types.ts';
import { selectingClusterPolicies, selectingPolicies, tierPlan } from '../../semantics/index.ts';
import type { SidedEvaluator, Side } from '../sided.ts';
import { groupEndpoints, type EndpointView } from '../workload-view.ts';
import type { DiffPeer } from './types.ts';
import {
  clusterPolicyObject,
  endpointObject,
  networkPolicyObject,
  type EndpointFieldKeys,
} from './objects.ts';

/** A workload (or pod) as it is before and after; its members are empty on a side it does not exist. */
export interface Unit {
  readonly key: string;
  readonly peer: Extract<DiffPeer, { type: 'endpoint' }>;
  /** Members sorted by their fields, so that equal fields pair up across the two inputs. */
  readonly before: readonly Endpoint[];
  readonly after: readonly Endpoint[];
  fieldsChanged: boolean;
  readonly sideChanged: Record<Side, boolean>;
  /** Changed objects that reach the unit's pods, per side (policies, the pods themselves, their namespace). */
  readonly causes: Record<Side, Set<string>>;
}

interface UnitOptions {
  readonly by?: EndpointView;
  /** Only endpoints in these namespaces (all when absent or empty). */
  readonly namespaces?: readonly string[];
}

export function unitsOf(
  before: Cluster,
  after: Cluster,
  options: UnitOptions,
  fieldKeys: { readonly before: EndpointFieldKeys; readonly after: EndpointFieldKeys },
): Unit[] {
  const view = options.by ?? 'workload';
  const namespaces = options.namespaces?.length ? new Set(options.namespaces) : undefined;
  const inScope = (e: Endpoint): boolean => !namespaces || namespaces.has(e.namespace);
  const units = new Map<string, { peer: Unit['peer']; before: Endpoint[]; after: Endpoint[] }>();
  const add = (cluster: Cluster, which: 'before' | 'after'): void => {
    for (const group of groupEndpoints(cluster.endpoints.filter(inScope), view)) {
      const key = `${group.kind} ${group.id}`;
      let unit = units.get(key);
      if (!unit) {
        const peer = {
          type: 'endpoint' as const,
          id: group.id,
          label: group.label,
          kind: group.kind,
          namespace: group.namespace,
        };
        units.set(key, (unit = { peer, before: [], after: [] }));
      }
      // groupEndpoints made the list for this call: sorted in place below, not copied.
      unit[which] = group.members as Endpoint[];
    }
  };
  add(before, 'before');
  add(after, 'after');
  // Each member's key computed once per input (not once per comparison of the sort).
  const byFields = (keys: EndpointFieldKeys) => {
    return (a: Endpoint, b: Endpoint): number => {
      const x = keys.keyOf(a);
      const y = keys.keyOf(b);
      return x < y ? -1 : x > y ? 1 : 0;
    };
  };
  return [...units].map(([key, u]) => ({
    key,
    peer: u.peer,
    before: u.before.length > 1 ? u.before.sort(byFields(fieldKeys.before)) : u.before,
    after: u.after.length > 1 ? u.after.sort(byFields(fieldKeys.after)) : u.after,
    fieldsChanged: u.before.length === 0 || u.after.length === 0,
    sideChanged: { egress: false, ingress: false },
    causes: { egress: new Set<string>(), ingress: new Set<string>() },
  }));
}

/** What `markChangedSides` reads of the diff in progress. */
interface SideInputs {
  readonly before: Cluster;
  readonly after: Cluster;
  readonly old: SidedEvaluator;
  readonly next: SidedEvaluator;
  readonly semantics: Semantics;
  readonly fieldKeys: { readonly before: EndpointFieldKeys; readonly after: EndpointFieldKeys };
  /** Changed objects by name (`NetworkPolicy ns/name`, `Namespace ns`, `Pod ns/name`, …). */
  readonly changed: ReadonlySet<string>;
  /** The endpoints (of either input) that were added, removed or modified. */
  readonly changedEndpoints: ReadonlySet<Endpoint>;
  /** Namespaces where the Namespace or a NetworkPolicy was added, removed or modified. */
  readonly changedNamespaces: ReadonlySet<string>;
  readonly nodesChanged: boolean;
  /** A number per policy content (equal contents, equal numbers). */
  readonly numberOf: (policy: object) => number;
}

/** Sets each unit's `fieldsChanged`, `sideChanged` and `causes`. */
export function markChangedSides(units: readonly Unit[], inputs: SideInputs): void {
  const { changed, fieldKeys, semantics, old, next, nodesChanged, numberOf } = inputs;
  // Where no policy can have changed for a unit, its sides are the same by content before and
  // after without asking each member: no cluster policy in either input (they select across
  // namespaces, by fields a diff does not key), neither the unit's namespace nor any
  // NetworkPolicy in it changed, and its members' fields did not. A busy pull request touches a
  // few namespaces of thousands; asking every endpoint's policies was a sixth of a diff. (Node
  // changes and the proposal's DefaultDeny make the diff compare everything they reach anyway —
  // diff.ts's scope — and the Namespace's own change is kept as a condition for that reason.)
  const namespacedOnly =
    inputs.before.clusterPolicies.length === 0 && inputs.after.clusterPolicies.length === 0;
  for (const unit of units) {
    unit.fieldsChanged ||= !sameFields(unit.before, fieldKeys.before, unit.after, fieldKeys.after);
    // The unit's changed members and its changed namespace are causes on both its sides.
    const memberCauses = new Set<string>();
    for (const members of [unit.before, unit.after])
      for (const e of members) if (inputs.changedEndpoints.has(e)) memberCauses.add(endpointObject(e));
    const namespace = unit.peer.namespace;
    if (changed.has(`Namespace ${namespace}`)) memberCauses.add(`Namespace ${namespace}`);
    const settled =
      namespacedOnly && !nodesChanged && !unit.fieldsChanged && !inputs.changedNamespaces.has(namespace);
    for (const side of ['egress', 'ingress'] as const) {
      if (!settled) {
        const was = new Set<string>();
        const is = new Set<string>();
        const note = (name: string): void => {
          if (changed.has(name)) unit.causes[side].add(name);
        };
        for (const e of unit.before) was.add(sideContext(old, e, side, semantics, numberOf, note));
        for (const e of unit.after) is.add(sideContext(next, e, side, semantics, numberOf, note));
        unit.sideChanged[side] = nodesChanged || !sameSets(was, is);
      }
      for (const cause of memberCauses) unit.causes[side].add(cause);
    }
  }
}

/**
 * Whether two member lists have the same fields, one by one, their namespaces' labels included
 * (pod names left out: they change with every rollout). Compared part by part: a key joining the
 * parts would be a string per member made to be compared once.
 */
function sameFields(
  a: readonly Endpoint[],
  aKeys: EndpointFieldKeys,
  b: readonly Endpoint[],
  bKeys: EndpointFieldKeys,
): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Endpoint;
    const y = b[i] as Endpoint;
    if (aKeys.ownOf(x).key !== bKeys.ownOf(y).key) return false;
    if (aKeys.namespaceKeyOf(x.namespace) !== bKeys.namespaceKeyOf(y.namespace)) return false;
  }
  return true;
}

function sameSets(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/**
 * The policies deciding one side of an endpoint, by content (their numbers, in order), each
 * policy's name handed to `note`.
 */
function sideContext(
  evaluator: SidedEvaluator,
  endpoint: Endpoint,
  side: Side,
  semantics: Semantics,
  numberOf: (policy: object) => number,
  note: (name: string) => void,
): string {
  let key = '';
  for (const p of selectingPolicies(evaluator.index, endpoint, side, semantics)) {
    key += `${numberOf(p)},`;
    note(networkPolicyObject(p));
  }
  key += '|';
  for (const tier of tierPlan(evaluator.index.cluster))
    for (const p of selectingClusterPolicies(evaluator.index, endpoint, side, tier.name)) {
      key += `${numberOf(p)},`;
      note(clusterPolicyObject(p));
    }
  return key;
}
