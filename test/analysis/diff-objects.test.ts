/**
 * The object comparison of a diff walks each kind's two lists side by side when they are sorted
 * (as ingest sorts them) and keeps one in a map by name otherwise: both give exactly what a map
 * of every object by name gives — the same changes, in the same order (the new input's objects,
 * then removed ones) — on random pairs of clusters, as built and with their lists reversed; and
 * so do policies keyed by their versions (`policyVersions`) instead of their content.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  clusterPolicyObject,
  contentKey,
  EndpointFieldKeys,
  endpointObject,
  networkPolicyObject,
  objectAndEndpointChanges,
} from '../../src/analysis/diff/objects.ts';
import { policyVersions } from '../../src/analysis/diff/policy-versions.ts';
import type { ObjectChange } from '../../src/analysis/diff/types.ts';
import type { Cluster, SourceLocation } from '../../src/model/types.ts';
import { formatIp } from '../../src/net/ip.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, type Raw } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

interface Keyed {
  readonly object: string;
  readonly key: string;
  readonly location: SourceLocation | undefined;
  readonly fields: Record<string, string> | undefined;
}

/** Every object of a cluster by name and content, in kind order: the oracle's input. */
function keyed(cluster: Cluster): Keyed[] {
  const keys = new EndpointFieldKeys(cluster);
  return [
    ...cluster.policies.map((p) => ({
      object: networkPolicyObject(p),
      key: contentKey(p),
      location: p.location,
      fields: undefined,
    })),
    ...cluster.clusterPolicies.map((p) => ({
      object: clusterPolicyObject(p),
      key: contentKey(p),
      location: p.location,
      fields: undefined,
    })),
    ...[...cluster.namespaces.values()].map((ns) => {
      const fields = { labels: contentKey(ns.labels), DefaultDeny: ns.legacyIngressIsolation ?? '' };
      return { object: `Namespace ${ns.name}`, key: contentKey(fields), fields, location: ns.location };
    }),
    ...cluster.endpoints.map((e) => ({ object: endpointObject(e), ...keys.ownOf(e), location: e.location })),
    ...[...cluster.nodes.values()].map((node) => {
      const fields = { labels: contentKey(node.labels), addresses: node.addresses.map(formatIp).join(',') };
      return { object: `Node ${node.name}`, key: contentKey(fields), fields, location: undefined };
    }),
  ];
}

/** The oracle: every old object in a map by name, the new ones looked up in it. */
function byMap(before: Cluster, after: Cluster): ObjectChange[] {
  const old = new Map(keyed(before).map((k) => [k.object, k]));
  const changes: ObjectChange[] = [];
  for (const next of keyed(after)) {
    const previous = old.get(next.object);
    old.delete(next.object);
    if (previous && previous.key === next.key) continue;
    const where = next.location ? { location: next.location } : {};
    if (!previous) changes.push({ object: next.object, change: 'added', ...where });
    else {
      const fields =
        previous.fields && next.fields
          ? Object.keys(next.fields).filter((f) => previous.fields?.[f] !== next.fields?.[f])
          : undefined;
      changes.push({ object: next.object, change: 'modified', ...(fields ? { fields } : {}), ...where });
    }
  }
  for (const gone of old.values())
    changes.push({
      object: gone.object,
      change: 'removed',
      ...(gone.location ? { location: gone.location } : {}),
    });
  return changes;
}

/** The comparison as a diff makes it: each policy's key from `policyVersions`, not its content. */
function withVersions(before: Cluster, after: Cluster): ObjectChange[] {
  return objectAndEndpointChanges(before, after, {
    before: new EndpointFieldKeys(before),
    after: new EndpointFieldKeys(after),
    policy: policyVersions(before, after),
  }).objects;
}

/** The same cluster with its endpoint and policy lists in reverse: not sorted, so kept by name. */
function reversed(cluster: Cluster): Cluster {
  return {
    ...cluster,
    endpoints: [...cluster.endpoints].reverse(),
    policies: [...cluster.policies].reverse(),
  };
}

/** A second version: some objects gone, some pods relabelled, the rest as they were. */
const changedArb = (objects: Raw[]): fc.Arbitrary<Raw[]> =>
  fc
    .tuple(fc.array(fc.nat(), { maxLength: 3 }), fc.array(fc.nat(), { maxLength: 3 }))
    .map(([drops, relabels]) =>
      objects.flatMap((o, i) => {
        if (o.kind !== 'Namespace' && drops.some((d) => d % objects.length === i)) return [];
        if (o.kind === 'Pod' && relabels.some((r) => r % objects.length === i)) {
          const metadata = o.metadata as Raw;
          return [{ ...o, metadata: { ...metadata, labels: { ...(metadata.labels as Raw), moved: 'yes' } } }];
        }
        return [o];
      }),
    );

describe('the object comparison of a diff', () => {
  it('equals a map of every object by name, walked side by side or not', () => {
    let changes = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 2 }).chain((objects) =>
          fc.tuple(
            fc.constant(objects),
            fc.oneof(changedArb(objects), clusterArb({ maxPods: 7, maxPolicies: 4 })),
          ),
        ),
        ([beforeObjects, afterObjects]) => {
          const before = clusterOf(beforeObjects);
          const after = clusterOf(afterObjects);
          const expected = byMap(before, after);
          changes += expected.length;
          assert.deepEqual(objectAndEndpointChanges(before, after).objects, expected);
          assert.deepEqual(withVersions(before, after), expected);
          const [b, a] = [reversed(before), reversed(after)];
          assert.deepEqual(objectAndEndpointChanges(b, a).objects, byMap(b, a));
          assert.deepEqual(withVersions(b, a), byMap(b, a));
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(changes > RUNS, `only ${changes} changes in ${RUNS} runs`);
  });

  it('names the endpoints of either input that were added, removed or modified', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 2 }).chain((objects) =>
          fc.tuple(fc.constant(objects), changedArb(objects)),
        ),
        ([beforeObjects, afterObjects]) => {
          const before = clusterOf(beforeObjects);
          const after = clusterOf(afterObjects);
          const { objects, endpoints } = objectAndEndpointChanges(before, after);
          const named = new Set(objects.map((o) => o.object));
          const expected = [...before.endpoints, ...after.endpoints].filter((e) =>
            named.has(endpointObject(e)),
          );
          assert.deepEqual(new Set(endpoints), new Set(expected));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
