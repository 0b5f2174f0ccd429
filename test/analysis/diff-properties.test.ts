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
import { clusterArb, EXTERNAL_IPS, policiesArb, ruleArb } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf, ipOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

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
  let pairs = 0;
  for (const s of sources)
    for (const d of destinations) {
      // A pod to itself is no connection policy decides (the diff leaves it out).
      if (s.kind === 'endpoint' && d.kind === 'endpoint' && s.endpoint === d.endpoint) continue;
      pairs++;
      const ports = allowedPorts(index, s, d);
      every = intersectPorts(every, ports);
      some = unionPorts(some, ports);
    }
  if (pairs === 0) return `${formatPortSet(ALL_PORTS)}|${formatPortSet(ALL_PORTS)}`;
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

type Edit = {
  policy: number;
  direction: 'ingress' | 'egress';
  rule: number;
  kind: string;
  peer: number;
  with: Raw;
};

/**
 * A policy edited in place (its name kept): one rule's peer replaced, dropped or added, its
 * ports replaced, an ipBlock's except dropped, or its pod selector changed — what the diff
 * compares rule by rule (where the policy selects the same pods in both versions).
 */
function editPolicy(policy: Raw, edit: Edit): Raw {
  const spec = structuredClone(policy.spec) as Raw;
  // Which pods it selects: a workload's pods may differ in `tier` (then it selects some of them).
  if (edit.kind === 'select-all') spec.podSelector = {};
  if (edit.kind === 'select-tier') spec.podSelector = { matchLabels: { tier: '1' } };
  const rules = spec[edit.direction] as Raw[] | undefined;
  const key = edit.direction === 'ingress' ? 'from' : 'to';
  const rule = rules?.[edit.rule % rules.length];
  if (!rule) return policy;
  const peers = rule[key] as Raw[] | undefined;
  const fresh = (edit.with[key] as Raw[] | undefined)?.[0];
  if (edit.kind === 'ports') {
    if (edit.with.ports === undefined) delete rule.ports;
    else rule.ports = edit.with.ports;
  } else if (peers && peers.length > 0) {
    const k = edit.peer % peers.length;
    const block = (peers[k] as Raw).ipBlock as Raw | undefined;
    if (edit.kind === 'replace-peer' && fresh) peers[k] = fresh;
    if (edit.kind === 'drop-peer') peers.splice(k, 1);
    if (edit.kind === 'add-peer' && fresh) peers.push(fresh);
    if (edit.kind === 'drop-except' && block) peers[k] = { ipBlock: { cidr: block.cidr } };
  }
  return { ...policy, spec };
}

const editArb = (direction: 'ingress' | 'egress'): fc.Arbitrary<Edit> =>
  fc.record({
    policy: fc.nat(5),
    direction: fc.constant(direction),
    rule: fc.nat(2),
    kind: fc.constantFrom(
      'replace-peer',
      'drop-peer',
      'add-peer',
      'ports',
      'drop-except',
      'select-all',
      'select-tier',
    ),
    peer: fc.nat(2),
    with: ruleArb(direction === 'ingress' ? 'from' : 'to'),
  });

/**
 * A second version of a cluster: other policies, old ones edited in place, some pods relabelled
 * or gone, a namespace relabelled.
 */
const changedArb = (objects: Raw[], editsOnly = false): fc.Arbitrary<Raw[]> =>
  fc
    .record({
      policies: policiesArb(4),
      keepOldPolicies: fc.boolean(),
      drop: fc.nat(8),
      relabel: fc.nat(8),
      app: fc.constantFrom('web', 'api', 'db'),
      namespaceTeam: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
      rollout: fc.boolean(),
      edits: fc.array(fc.oneof(editArb('ingress'), editArb('egress')), {
        minLength: editsOnly ? 1 : 0,
        maxLength: 3,
      }),
    })
    .map((generated) => {
      const none = objects.length + 1;
      const { policies, keepOldPolicies, drop, relabel, app, namespaceTeam, rollout, edits } = editsOnly
        ? {
            ...generated,
            policies: [],
            keepOldPolicies: true,
            drop: none,
            relabel: none,
            namespaceTeam: undefined,
            rollout: false,
          }
        : generated;
      const oldPolicies = objects.filter((o) => o.kind === 'NetworkPolicy');
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
        if (o.kind === 'NetworkPolicy') {
          const mine = edits.filter((e) => oldPolicies[e.policy % oldPolicies.length] === original);
          result.push(mine.reduce(editPolicy, o));
          continue;
        }
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

  it("SidedEvaluator.ports equals allowedPorts with Calico's and Cilium's policies", () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 2, maxClusterPolicies: 1 }),
        calicoArb(3),
        ciliumArb(2),
        (objects, calico, cilium) => {
          const cluster = clusterOf([...objects, ...calico, ...cilium]);
          const index = indexCluster(cluster);
          const sided = new SidedEvaluator(cluster);
          for (const src of addresses(cluster))
            for (const dst of addresses(cluster))
              assert.equal(
                formatPortSet(sided.ports(src, dst)),
                formatPortSet(allowedPorts(index, src, dst)),
                `${label(src)} → ${label(dst)}`,
              );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("the diff is exactly the brute force when Calico's and Cilium's policies change", () => {
    let differences = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 2, maxClusterPolicies: 1 }).map(ownedByApp),
        fc.tuple(calicoArb(3), ciliumArb(2)),
        fc.tuple(calicoArb(3), ciliumArb(2)),
        (objects, [calico0, cilium0], [calico1, cilium1]) => {
          differences += diffIsBruteForce(
            [...objects, ...calico0, ...cilium0],
            [...objects, ...calico1, ...cilium1],
          );
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(differences > RUNS / 2, `only ${differences} differences in ${RUNS} runs`);
  });

  it('the diff is exactly the pairs of workloads whose allowed ports differ (and workload × outside range)', () => {
    let differences = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 2 })
          .map(ownedByApp)
          .chain((objects) => fc.tuple(fc.constant(objects), changedArb(objects))),
        ([beforeObjects, afterObjects]) => {
          differences += diffIsBruteForce(beforeObjects, afterObjects);
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(differences > RUNS, `only ${differences} differences in ${RUNS} runs`);
  });

  it('policies edited in place, compared rule by rule: still exactly the brute force', () => {
    let differences = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 5 })
          .map(ownedByApp)
          .chain((objects) => fc.tuple(fc.constant(objects), changedArb(objects, true))),
        ([beforeObjects, afterObjects]) => {
          differences += diffIsBruteForce(beforeObjects, afterObjects);
        },
      ),
      { numRuns: RUNS },
    );
    assert.ok(differences > RUNS / 2, `only ${differences} differences in ${RUNS} runs`);
  });

  it('a policy that now selects only some of a workload’s pods is not compared rule by rule', () => {
    // web's two pods differ in tier; `out` selected both and now selects tier 1 only, its ipBlock
    // narrowed: web's tier-2 pod loses all of it (10.0.0.0/16), not only what the edit removed.
    const objects = (selector: Raw, cidr: string): Raw[] =>
      ownedByApp([
        namespace('a'),
        pod('a', 'w1', { app: 'web', tier: '1' }, { ips: ['10.0.0.1'] }),
        pod('a', 'w2', { app: 'web', tier: '2' }, { ips: ['10.0.0.2'] }),
        pod('a', 'db', { app: 'db' }, { ips: ['10.0.1.1'] }),
        policy('a', 'deny-egress', { podSelector: {}, policyTypes: ['Egress'] }),
        policy('a', 'out', {
          podSelector: selector,
          policyTypes: ['Egress'],
          egress: [{ to: [{ ipBlock: { cidr } }] }],
        }),
      ]);
    const differences = diffIsBruteForce(
      objects({ matchLabels: { app: 'web' } }, '10.0.0.0/16'),
      objects({ matchLabels: { tier: '1' } }, '10.0.0.0/23'),
    );
    assert.ok(differences > 0);
  });
});

/** Holds the diff of two versions to the brute force; the number of differences. */
function diffIsBruteForce(beforeObjects: Raw[], afterObjects: Raw[]): number {
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
                (i) => i.family === r.interval.family && i.lo <= r.interval.lo && i.hi >= r.interval.hi,
              ),
            )
            .map((r) => `range ${formatInterval(r.interval)}`);
    const both = (every: PortSet, partial: PortSet | undefined): string =>
      `${formatPortSet(every)}|${formatPortSet(partial ? unionPorts(every, partial) : every)}`;
    for (const from of ends(c.from))
      for (const to of ends(c.to))
        got.add(`${from} > ${to}: ${both(c.before, c.partialBefore)} / ${both(c.after, c.partialAfter)}`);
  }
  const expected = bruteForce(before, after);
  assert.deepEqual([...got].sort(), [...expected].sort());
  return expected.size;
}

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
