/**
 * `lint --by class`: findings about endpoints (WORKLOAD_NOT_ISOLATED) said once per class of
 * endpoints no policy tells apart. On random clusters the class findings name, through their
 * members, exactly the endpoints the per-workload findings name — each once, each class's members
 * in one namespace — and every other finding is the same; auto stays per workload when small.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { lintCluster, type Finding } from '../../src/analysis/lint/index.ts';
import { groupEndpoints } from '../../src/analysis/workload-view.ts';
import { endpointRow } from '../../src/analysis/workload-view.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { load, namespace, pod } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

const CODE = 'WORKLOAD_NOT_ISOLATED';
const LONELY = [
  namespace('lonely'),
  ...[1, 2, 3].map((i) => pod('lonely', `alike-${i}`, { app: 'web' }, { ips: [`10.9.0.${i}`] })),
];
const others = (findings: readonly Finding[]): unknown[] =>
  findings.filter((f) => f.code !== CODE).map((f) => JSON.parse(JSON.stringify(f)) as unknown);

describe('lint per class', () => {
  it('class findings name exactly the endpoints the per-workload findings name', () => {
    let shared = 0;
    fc.assert(
      fc.property(clusterArb({ maxPods: 9, maxPolicies: 3, maxClusterPolicies: 2 }), (objects) => {
        // Besides the random pods, three alike in a namespace of their own, which only a cluster
        // policy may select: classes of several members no policy selects occur in most runs.
        const cluster = load([...objects, ...LONELY]).cluster;
        const byWorkload = lintCluster(cluster, { by: 'workload' });
        const byClass = lintCluster(cluster, { by: 'class' });
        const auto = lintCluster(cluster, { by: 'auto' });
        assert.deepEqual(JSON.parse(JSON.stringify(auto)), JSON.parse(JSON.stringify(byWorkload)));
        assert.deepEqual(others(byClass.findings), others(byWorkload.findings));
        // Per workload: the endpoints of each workload (or pod) a finding names.
        const rows = new Map(groupEndpoints(cluster.endpoints, 'workload').map((g) => [g.label, g.members]));
        const expected: string[] = [];
        for (const f of byWorkload.findings.filter((f) => f.code === CODE)) {
          const label = /^no policy selects (.*?)(?: \(\d+ pods\))?: every connection/.exec(f.message)?.[1];
          const members = label === undefined ? undefined : rows.get(label);
          assert.ok(members, f.message);
          expected.push(...members.map((m) => endpointRow(m).label));
        }
        const named: string[] = [];
        for (const f of byClass.findings.filter((f) => f.code === CODE)) {
          assert.ok(f.members && f.members.length > 0, f.message);
          if (f.members.length > 1) shared++;
          assert.equal(new Set(f.members.map((m) => m.split('/')[0])).size, 1, 'one namespace');
          named.push(...f.members);
        }
        assert.deepEqual(named.sort(), expected.sort());
        assert.equal(new Set(named).size, named.length, 'each endpoint once');
        assert.equal(
          byClass.summary.info + byClass.summary.warning + byClass.summary.error,
          byClass.findings.length,
        );
      }),
      { numRuns: propertyRuns(100) },
    );
    assert.ok(shared > 0, 'no class finding had two members');
  });

  it('auto: per class past 1,000 findings when classes are at most half as many', () => {
    const objects = [
      namespace('default'),
      ...Array.from({ length: 1200 }, (_, i) =>
        pod(
          'default',
          `pod-${i}`,
          { shard: `s-${i}` },
          { ips: [`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`] },
        ),
      ),
    ];
    const cluster = load(objects).cluster;
    const auto = lintCluster(cluster, { by: 'auto' });
    const found = auto.findings.filter((f) => f.code === CODE);
    assert.deepEqual(auto.classes, { findings: 1200, classes: 1 });
    assert.equal(found.length, 1);
    assert.equal(
      found[0]?.message,
      'no policy selects default/pod-* (1200 pods): every connection to and from it is allowed',
    );
    assert.equal(found[0]?.members?.length, 1200);
    assert.equal(
      lintCluster(cluster, { by: 'workload' }).findings.filter((f) => f.code === CODE).length,
      1200,
    );
  });
});
