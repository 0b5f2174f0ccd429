/**
 * `diff --by class`: the changed connections of the per-pod diff grouped by class pairs. A class
 * is taken over the union of both inputs — endpoints that no policy tells apart before *and*
 * none tells apart after (an endpoint on one side only is in a class of its own kind: added or
 * removed) — so a class pair means the same on both sides, and every member pair of a line had
 * the same ports before and has the same after. The endpoints whose own object changed (added,
 * removed, relabelled) are told apart from the others, and as a cause a member's own object is
 * named by its class (`members of shop/api-* (400 pods)`): so the causes are the same for every
 * member pair too. Lines are keyed by what they say (change, ports, causes), so a line stands for
 * exactly the member pairs it names; `pairs` counts them.
 */
import type { Cluster, Endpoint } from '../../model/types.ts';
import { formatPortSet } from '../../semantics/index.ts';
import { classRows, type ClassRow } from '../class-view.ts';
import { endpointClasses } from '../equivalence.ts';
import { endpointObject } from './objects.ts';
import type { ConnectionChange, ConnectivityDiff, DiffPeer } from './types.ts';

export interface ClassDiff {
  /** The diff with classes for endpoints (`id` `c1`…, `label` the class's, kind `Class`). */
  readonly diff: ConnectivityDiff;
  /** Every class of the two inputs, in the order numbered. */
  readonly rows: readonly ClassRow[];
  /** Per connection of `diff`: the endpoint pairs (or endpoint–range pairs) it stands for. */
  readonly pairs: readonly number[];
  /** The connections of the per-pod diff: the sum of `pairs`. */
  readonly endpointPairs: number;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const unitKey = (kind: string, id: string): string => `${kind} ${id}`;

/** Groups a diff computed `by: 'pod'` of `before` and `after` per class pair. */
export function classDiff(before: Cluster, after: Cluster, perPod: ConnectivityDiff): ClassDiff {
  const old = endpointClasses(before, before.endpoints).classOf;
  const next = endpointClasses(after, after.endpoints).classOf;
  // Each endpoint (by kind and name) with its class on each side (-1: absent there).
  const sides = new Map<string, { endpoint: Endpoint; before: number; after: number }>();
  before.endpoints.forEach((e, i) =>
    sides.set(unitKey(e.kind, e.id), { endpoint: e, before: old[i] as number, after: -1 }),
  );
  after.endpoints.forEach((e, i) => {
    const key = unitKey(e.kind, e.id);
    const found = sides.get(key);
    if (found) sides.set(key, { endpoint: e, before: found.before, after: next[i] as number });
    else sides.set(key, { endpoint: e, before: -1, after: next[i] as number });
  });
  const changed = new Set(perPod.objects.map((o) => o.object));
  const combined = new Map<string, number>();
  const members: Endpoint[] = [];
  const classOf: number[] = [];
  for (const side of sides.values()) {
    const key = `${side.before}:${side.after}:${changed.has(endpointObject(side.endpoint)) ? 1 : 0}`;
    let cls = combined.get(key);
    if (cls === undefined) combined.set(key, (cls = combined.size));
    members.push(side.endpoint);
    classOf.push(cls);
  }
  const { rows, rowOfClass } = classRows(members, Int32Array.from(classOf), combined.size);
  const rowOfUnit = new Map<string, ClassRow>();
  const classOfObject = new Map<string, string>();
  members.forEach((e, i) => {
    const row = rows[rowOfClass[classOf[i] as number] as number] as ClassRow;
    rowOfUnit.set(unitKey(e.kind, e.id), row);
    classOfObject.set(endpointObject(e), `members of ${row.label}`);
  });
  const causesOf = (causes: readonly string[]): string[] => [
    ...new Set(causes.map((cause) => classOfObject.get(cause) ?? cause)),
  ];
  const classPeers = new Map<ClassRow, DiffPeer>();
  const peerOf = (peer: DiffPeer): DiffPeer => {
    if (peer.type !== 'endpoint') return peer;
    const row = rowOfUnit.get(unitKey(peer.kind, peer.id));
    if (!row) return peer;
    let found = classPeers.get(row);
    if (!found) {
      found = { type: 'endpoint', id: row.id, label: row.label, kind: 'Class', namespace: row.namespace };
      classPeers.set(row, found);
    }
    return found;
  };
  const grouped = new Map<string, { connection: ConnectionChange; pairs: number }>();
  for (const c of perPod.connections) {
    const from = peerOf(c.from);
    const to = peerOf(c.to);
    const causes = causesOf(c.causes);
    const key = [
      from.id,
      to.id,
      c.change,
      formatPortSet(c.before),
      formatPortSet(c.after),
      c.partialBefore ? formatPortSet(c.partialBefore) : '',
      c.partialAfter ? formatPortSet(c.partialAfter) : '',
      causes.join('\u0000'),
    ].join('\u0000');
    const found = grouped.get(key);
    if (found) found.pairs++;
    else grouped.set(key, { connection: { ...c, from, to, causes }, pairs: 1 });
  }
  const distinct = (peers: readonly DiffPeer[]): DiffPeer[] => [...new Set(peers.map(peerOf))];
  const lines = [...grouped.values()].sort(
    (a, b) =>
      compare(a.connection.from.label, b.connection.from.label) ||
      compare(a.connection.to.label, b.connection.to.label),
  );
  return {
    diff: {
      ...perPod,
      endpoints: { added: distinct(perPod.endpoints.added), removed: distinct(perPod.endpoints.removed) },
      connections: lines.map((l) => l.connection),
    },
    rows,
    pairs: lines.map((l) => l.pairs),
    endpointPairs: perPod.connections.length,
  };
}
