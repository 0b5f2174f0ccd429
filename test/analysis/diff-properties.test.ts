/**
 * The sided, memoized evaluation equals `allowedPorts`; the diff equals comparing every pair of
 * endpoints and every endpoint with every outside address range, both ways, by brute force —
 * on random pairs of clusters where policies, pod labels, pods and namespace labels change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { addressRanges } from '../../src/analysis/address-ranges.ts';
import { diffConnectivity } from '../../src/analysis/diff/diff.ts';
import { SidedEvaluator } from '../../src/analysis/sided.ts';
import type { Cluster } from '../../src/model/types.ts';
import { formatInterval } from '../../src/net/intervals.ts';
import {
  ALL_PORTS,
  allowedPorts,
  EMPTY_PORTS,
  formatPortSet,
  indexCluster,
  intersectPorts,
  unionPorts,
  type Address,
  type PortSet,
} from '../../src/semantics/index.ts';
import { groupEndpoints } from '../../src/analysis/workload-view.ts';
import { clusterArb, EXTERNAL_IPS, policiesArb } from '../helpers/arbitraries.ts';
import { clusterOf, ipOf, type Raw } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function addresses(cluster: Cluster): Address[] {
  return [
    ...cluster.endpoints.map((endpoint) => ({ kind: 'endpoint' as const, endpoint })),
    ...EXTERNAL_IPS.map((text) => ({ kind: 'ip' as const, ip: ipOf(text) })),
  ];
}

/** Ports every pair of the two lists may use, and ports some may use: `every|some`. */
function allowed(
  index: ReturnType<typeof indexCluster>,
  sources: Address[],
  destinations: Address[],
): string {
  if (sources.length === 0 || destinations.length === 0) return 'none|none';
  let every = ALL_PORTS;
  let some = EMPTY_PORTS;
  for (const s of sources)
    for (const d of destinations) {
      const ports = allowedPorts(index, s, d);
      every = intersectPorts(every, ports);
      some = unionPorts(some, ports);
    }
  return `${formatPortSet(every)}|${formatPortSet(some)}`;
}

const label = (a: Address): string =>
  a.kind === 'endpoint' ? a.endpoint.id : `${a.ip.family}:${a.ip.value}`;

/** Pods with an `app` label belong to a StatefulSet named after it, so workloads have several pods. */
function ownedByApp(objects: Raw[]): Raw[] {
  return objects.map((o) => {
    if (o.kind !== 'Pod') return o;
    const metadata = o.metadata as Raw;
    const app = (metadata.labels as Record<string, string>).app;
    if (!app) return o;
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      name: `set-${app}`,
      uid: app,
      controller: true,
    };
    return { ...o, metadata: { ...metadata, ownerReferences: [owner] } };
  });
}

/** A second version of a cluster: other policies, some pods relabelled or gone, a namespace relabelled. */
const changedArb = (objects: Raw[]): fc.Arbitrary<Raw[]> =>
  fc
    .record({
      policies: policiesArb(4),
      keepOldPolicies: fc.boolean(),
      drop: fc.nat(8),
      relabel: fc.nat(8),
      app: fc.constantFrom('web', 'api', 'db'),
      namespaceTeam: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
      rollout: fc.boolean(),
    })
    .map(({ policies, keepOldPolicies, drop, relabel, app, namespaceTeam, rollout }) => {
      const pods = objects.filter((o) => o.kind === 'Pod');
      // A rollout renames every pod (in reverse order), as new pods of a workload get new names.
      const renamed = (o: Raw): Raw =>
        rollout && o.kind === 'Pod'
          ? { ...o, metadata: { ...(o.metadata as Raw), name: `r${pods.length - pods.indexOf(o)}` } }
          : o;
      const result: Raw[] = [];
      for (const original of objects) {
        const o = renamed(original);
        if (o.kind === 'NetworkPolicy' && !keepOldPolicies) continue;
        if (o.kind === 'Pod' && original === pods[drop % (pods.length + 1)]) continue;
        if (o.kind === 'Pod' && original === pods[relabel % (pods.length + 1)]) {
          const metadata = o.metadata as Raw;
          result.push({ ...o, metadata: { ...metadata, labels: { ...(metadata.labels as Raw), app } } });
          continue;
        }
        if (o.kind === 'Namespace' && namespaceTeam && (o.metadata as Raw).name === 'a') {
          const metadata = o.metadata as Raw;
          result.push({
            ...o,
            metadata: { ...metadata, labels: { ...(metadata.labels as Raw), team: namespaceTeam } },
          });
          continue;
        }
        result.push(o);
      }
      return [
        ...result,
        ...policies.map((p) => ({
          ...p,
          metadata: { ...(p.metadata as Raw), name: `new-${String((p.metadata as Raw).name)}` },
        })),
      ];
    });

describe('sided evaluation and the diff', () => {
  it('SidedEvaluator.ports equals allowedPorts for every pair', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 6, maxPolicies: 5, maxClusterPolicies: 3 }), (objects) => {
        const cluster = clusterOf(objects);
        const index = indexCluster(cluster);
        const sided = new SidedEvaluator(cluster);
        for (const src of addresses(cluster))
          for (const dst of addresses(cluster))
            assert.equal(
              formatPortSet(sided.ports(src, dst)),
              formatPortSet(allowedPorts(index, src, dst)),
              `${label(src)} → ${label(dst)}`,
            );
      }),
      { numRuns: RUNS },
    );
  });

  it('the diff is exactly the pairs of workloads whose allowed ports differ (and workload × outside range)', () => {
    let differences = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 2 })
          .map(ownedByApp)
          .chain((objects) => fc.tuple(fc.constant(objects), changedArb(objects))),
        ([beforeObjects, afterObjects]) => {
          const before = clusterOf(beforeObjects);
          const after = clusterOf(afterObjects);
          const diff = diffConnectivity(before, after);
          const ranges = addressRanges([before, after]);
          const got = new Set<string>();
          for (const c of diff.connections) {
            // Merged ranges stand for every range they hold.
            const ends = (p: (typeof c)['from']): string[] =>
              p.type === 'endpoint'
                ? [p.label]
                : ranges
                    .filter((r) =>
                      p.intervals.some(
                        (i) =>
                          i.family === r.interval.family && i.lo <= r.interval.lo && i.hi >= r.interval.hi,
                      ),
                    )
                    .map((r) => `range ${formatInterval(r.interval)}`);
            const both = (every: PortSet, partial: PortSet | undefined): string =>
              `${formatPortSet(every)}|${formatPortSet(partial ? unionPorts(every, partial) : every)}`;
            for (const from of ends(c.from))
              for (const to of ends(c.to))
                got.add(
                  `${from} > ${to}: ${both(c.before, c.partialBefore)} / ${both(c.after, c.partialAfter)}`,
                );
          }
          const expected = bruteForce(before, after);
          differences += expected.size;
          assert.deepEqual([...got].sort(), [...expected].sort());
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(differences > RUNS, `only ${differences} differences in ${RUNS} runs`);
  });
});

/** Every pair of workloads compared pod pair by pod pair; outside ranges expanded to the diff's ranges. */
function bruteForce(before: Cluster, after: Cluster): Set<string> {
  const old = indexCluster(before);
  const next = indexCluster(after);
  const ranges = addressRanges([before, after]);
  type End = { label: string; before: Address[]; after: Address[]; range: boolean };
  const ends = new Map<string, End>();
  const add = (cluster: Cluster, which: 'before' | 'after'): void => {
    for (const g of groupEndpoints(cluster.endpoints, 'workload')) {
      const key = `${g.kind} ${g.id}`;
      const entry = ends.get(key) ?? { label: g.label, before: [], after: [], range: false };
      entry[which] = g.members.map((endpoint) => ({ kind: 'endpoint' as const, endpoint }));
      ends.set(key, entry);
    }
  };
  add(before, 'before');
  add(after, 'after');
  const all: End[] = [
    ...ends.values(),
    ...ranges.map((r) => {
      const ip: Address = { kind: 'ip', ip: r.representative };
      return { label: `range ${formatInterval(r.interval)}`, before: [ip], after: [ip], range: true };
    }),
  ];
  const result = new Set<string>();
  for (const from of all)
    for (const to of all) {
      if (from.range && to.range) continue;
      const was = allowed(old, from.before, to.before);
      const is = allowed(next, from.after, to.after);
      if (was !== is) result.add(`${from.label} > ${to.label}: ${was} / ${is}`);
    }
  return result;
}
