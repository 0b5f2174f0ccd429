/**
 * `explain --by class` explains each class of endpoints no policy tells apart once: on random
 * clusters (NetworkPolicies, cluster policies, Calico's and Cilium's, host-network and
 * dual-stack pods, replicas, a policy dropped as invalid), every member's explanation made from
 * its class's is exactly the one `explain` gives that endpoint alone — as data and as text — and
 * the classes hold every endpoint once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { explainEndpoints } from '../../src/analysis/explain.ts';
import { explainClasses, memberExplanation } from '../../src/analysis/explain-classes.ts';
import { formatExplainText } from '../../src/analysis/format/explain-text.ts';
import { PLAIN } from '../../src/analysis/format/style.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { load, type Raw } from '../helpers/builders.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

/** A NetworkPolicy dropped as invalid (its CIDR), selecting by a label no other selector may read. */
const droppedArb: fc.Arbitrary<Raw[]> = fc
  .option(
    fc.record({
      namespace: fc.constantFrom('a', 'b', 'c'),
      selector: fc.constantFrom({}, { app: 'web' }, { tier: '2' }),
    }),
    { nil: undefined },
  )
  .map((d) =>
    d
      ? [
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'NetworkPolicy',
            metadata: { name: 'broken', namespace: d.namespace },
            spec: {
              podSelector: { matchLabels: d.selector },
              ingress: [{ from: [{ ipBlock: { cidr: 'not-a-cidr' } }] }],
            },
          },
        ]
      : [],
  );

const asData = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('explain --by class', () => {
  it("gives back every member's own explanation, exactly", () => {
    let shared = 0;
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 9, maxPolicies: 4, maxClusterPolicies: 2 }),
        calicoArb(2),
        ciliumArb(2),
        droppedArb,
        (objects, calico, cilium, dropped) => {
          const cluster = load([...objects, ...calico, ...cilium, ...dropped]).cluster;
          const each = explainEndpoints(cluster, cluster.endpoints);
          const byId = new Map(each.map((e) => [e.endpoint, e]));
          const classes = explainClasses(cluster, cluster.endpoints);
          assert.equal(classes.endpoints, cluster.endpoints.length);
          const seen = new Set<string>();
          for (const c of classes.classes) {
            if (c.row.members.length > 1) shared++;
            for (const member of c.row.members) {
              assert.ok(!seen.has(member.id), `${member.id} in two classes`);
              seen.add(member.id);
              const expanded = memberExplanation(c, member);
              const own = byId.get(member.id);
              assert.deepEqual(asData(expanded), asData(own), `${member.id} (class ${c.row.label})`);
              assert.equal(formatExplainText([expanded], PLAIN), formatExplainText([own!], PLAIN));
            }
          }
          assert.equal(seen.size, cluster.endpoints.length);
        },
      ),
      { numRuns: propertyRuns(100) },
    );
    // The property says something only if classes of several members occur.
    assert.ok(shared > 0, 'no class had two members');
  });

  it('tells apart endpoints that only a policy dropped as invalid would have selected', () => {
    const pod = (name: string, tier: string): Raw => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'a', labels: { app: 'web', tier } },
      spec: { containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: name === 'one' ? '10.0.0.1' : '10.0.0.2' },
    });
    const cluster = load([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
      pod('one', '1'),
      pod('two', '2'),
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'web', namespace: 'a' },
        spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{}] },
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'broken', namespace: 'a' },
        spec: {
          podSelector: { matchLabels: { tier: '2' } },
          ingress: [{ from: [{ ipBlock: { cidr: 'not-a-cidr' } }] }],
        },
      },
    ]).cluster;
    assert.equal(cluster.rejectedPolicies?.length, 1);
    const classes = explainClasses(cluster, cluster.endpoints).classes;
    assert.deepEqual(
      classes.map((c) => [c.row.label, c.ingress.dropped?.map((d) => d.endpoint) ?? []]),
      [
        ['a/one', []],
        ['a/two', ['a/two']],
      ],
    );
  });
});
