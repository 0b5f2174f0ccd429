/**
 * `diff --by class`: the per-pod diff grouped by class pairs of the two inputs. On random pairs
 * of clusters (policies added, a pod dropped, a pod relabelled, a namespace relabelled), the class
 * lines expanded to their member pairs are exactly the per-pod diff's connections, with the same
 * change, ports and causes (a member's own object as a cause named by its class). A pod to itself is in the diff only when it exists on one side (its
 * connections are all added or all removed), so a class of such pods expands with its self pairs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classDiff } from '../../src/analysis/diff/classes.ts';
import { diffConnectivity } from '../../src/analysis/diff/diff.ts';
import { endpointObject } from '../../src/analysis/diff/objects.ts';
import type { ConnectionChange, DiffPeer } from '../../src/analysis/diff/types.ts';
import { endpointRow } from '../../src/analysis/workload-view.ts';
import { formatPortSet } from '../../src/semantics/index.ts';
import { clusterArb, policiesArb } from '../helpers/arbitraries.ts';
import { load, type Raw } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

/** A later version: new policies, maybe the old ones gone, a pod dropped, one relabelled, namespace a relabelled. */
const laterArb = (objects: Raw[]): fc.Arbitrary<Raw[]> =>
  fc
    .record({
      policies: policiesArb(3),
      keepOld: fc.boolean(),
      drop: fc.nat(8),
      relabel: fc.nat(8),
      app: fc.constantFrom('web', 'api', 'db'),
      team: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
    })
    .map(({ policies, keepOld, drop, relabel, app, team }) => {
      const pods = objects.filter((o) => o.kind === 'Pod');
      const result: Raw[] = [];
      for (const o of objects) {
        const metadata = o.metadata as Raw;
        if (o.kind === 'NetworkPolicy' && !keepOld) continue;
        if (o === pods[drop % (pods.length + 1)]) continue;
        if (o === pods[relabel % (pods.length + 1)])
          result.push({ ...o, metadata: { ...metadata, labels: { ...(metadata.labels as Raw), app } } });
        else if (o.kind === 'Namespace' && team && metadata.name === 'a')
          result.push({ ...o, metadata: { ...metadata, labels: { ...(metadata.labels as Raw), team } } });
        else result.push(o);
      }
      return [
        ...result,
        ...policies.map((p) => ({
          ...p,
          metadata: { ...(p.metadata as Raw), name: `new-${String((p.metadata as Raw).name)}` },
        })),
      ];
    });

const says = (c: ConnectionChange, causes: readonly string[] = c.causes): string =>
  [
    c.change,
    formatPortSet(c.before),
    formatPortSet(c.after),
    c.partialBefore ? formatPortSet(c.partialBefore) : '',
    c.partialAfter ? formatPortSet(c.partialAfter) : '',
    [...new Set(causes)].join(','),
  ].join('|');

describe('diff per class', () => {
  it('class lines expand to exactly the per-pod connections', () => {
    let grouped = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 4 }).chain((objects) =>
          fc.tuple(fc.constant(objects), laterArb(objects)),
        ),
        ([beforeObjects, afterObjects]) => {
          const before = load(beforeObjects).cluster;
          const after = load(afterObjects).cluster;
          const perPod = diffConnectivity(before, after, { by: 'pod' });
          const classes = classDiff(before, after, perPod);
          const members = new Map(
            classes.rows.map((r) => [r.id, r.members.map((m) => endpointRow(m).label)]),
          );
          const expand = (peer: DiffPeer): string[] =>
            peer.type === 'endpoint' && peer.kind === 'Class' ? (members.get(peer.id) ?? []) : [peer.label];
          const oneSided = new Set(
            [...classes.diff.endpoints.added, ...classes.diff.endpoints.removed].map((p) => p.id),
          );
          const expanded: string[] = [];
          classes.diff.connections.forEach((c, i) => {
            let pairs = 0;
            for (const a of expand(c.from))
              for (const b of expand(c.to)) {
                if (a === b && !oneSided.has(c.from.id)) continue;
                pairs++;
                expanded.push(`${a} → ${b} ${says(c)}`);
              }
            assert.equal(classes.pairs[i], pairs, `${c.from.label} → ${c.to.label}`);
            if (pairs > 1) grouped++;
          });
          // A member's own object, as a cause, is named by its class.
          const byClass = new Map(
            classes.rows.flatMap((r) =>
              r.members.map((m) => [endpointObject(m), `members of ${r.label}`] as const),
            ),
          );
          const own = perPod.connections.map(
            (c) =>
              `${c.from.label} → ${c.to.label} ${says(
                c,
                c.causes.map((x) => byClass.get(x) ?? x),
              )}`,
          );
          assert.deepEqual(expanded.sort(), own.sort());
          assert.equal(classes.endpointPairs, own.length);
        },
      ),
      { numRuns: propertyRuns(100) },
    );
    assert.ok(grouped > 0, 'no class line stood for two pairs');
  });
});
