/**
 * The heatmap's counts come from classes (each cell summed over the class pairs that may
 * connect); on random clusters they equal counting every pod pair of the cell by the reference
 * evaluator, at the namespace, workload and pod levels, per port and on any port.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import { Reachability } from '../../src/serve/reachability.ts';
import { isNoPorts } from '../../src/semantics/index.ts';
import type { Heatmap } from '../../src/serve/api-types.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

describe('heatmap counts', () => {
  it('equal counting every pod pair, at every level, per port and on any port', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 4, maxClusterPolicies: 2 }),
        fc.constantFrom(
          undefined,
          { port: 80, protocol: 'TCP' as const },
          { port: 'http', protocol: 'TCP' as const },
        ),
        fc.constantFrom('compiled' as const, 'reference' as const),
        (objects, query, engine) => {
          const cluster = clusterOf(objects);
          const reach = new Reachability(cluster, 'v1', engine);
          const pods = reach.pods;
          const truth = computeMatrix(cluster, {
            endpoints: pods,
            queries: query ? [query] : [],
            engine: 'reference',
          });
          const allowed = (i: number, j: number): boolean =>
            query ? truth.allowed(i, j, 0) : !isNoPorts(truth.ports(i, j));
          const index = new Map(pods.map((p, i) => [p, i]));
          const check = (map: Heatmap, groupPods: (id: string) => number[]): void => {
            const cells = new Map(map.cells.map(([r, c, n]) => [`${r},${c}`, n]));
            map.rows.forEach((row, r) =>
              map.columns.forEach((column, c) => {
                let n = 0;
                for (const i of groupPods(row.id))
                  for (const j of groupPods(column.id)) if (i !== j && allowed(i, j)) n++;
                assert.equal(cells.get(`${r},${c}`) ?? 0, n, `${map.level} ${row.id} → ${column.id}`);
              }),
            );
          };
          const namespaces = reach.heatmap(query, 'namespace') as Heatmap;
          check(namespaces, (ns) => pods.flatMap((p, i) => (p.namespace === ns ? [i] : [])));
          const workloadOf = (i: number): string => {
            const p = pods[i];
            return p ? `${p.namespace}/${p.workload?.name ?? p.name}[${p.workload?.kind ?? 'Pod'}]` : '';
          };
          for (const a of namespaces.rows)
            for (const b of namespaces.rows) {
              const workloads = reach.heatmap(query, 'workload', a.id, b.id) as Heatmap;
              check(workloads, (id) => pods.flatMap((_, i) => (workloadOf(i) === id ? [i] : [])));
              for (const w of workloads.rows)
                for (const v of workloads.columns) {
                  const cells = reach.heatmap(query, 'pod', w.id, v.id) as Heatmap;
                  check(cells, (id) => pods.flatMap((p, i) => (p.id === id ? [index.get(p) ?? i] : [])));
                }
            }
        },
      ),
      { numRuns: propertyRuns(60) },
    );
  });
});
