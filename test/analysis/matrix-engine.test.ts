/**
 * The matrix through the compiled classifier equals the matrix through the reference evaluator:
 * every pair, several ports and protocols (named ports included), on random clusters and on the
 * bundled example from the command line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import type { PortQuery } from '../../src/analysis/types.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const QUERIES: PortQuery[] = [
  { port: 80, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
  { port: 'http', protocol: 'TCP' },
  { port: 5000, protocol: 'SCTP' },
  { port: 8500, protocol: 'TCP' },
];

describe('matrix --engine compiled', () => {
  it('equals the reference on random clusters (tiered policies too), with and without equivalence classes', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 3 }),
        fc.boolean(),
        (objects, useClasses) => {
          const cluster = clusterOf(objects);
          const reference = computeMatrix(cluster, { queries: QUERIES, useClasses });
          const compiled = computeMatrix(cluster, { queries: QUERIES, useClasses, engine: 'compiled' });
          const n = cluster.endpoints.length;
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++)
              for (let q = 0; q < QUERIES.length; q++)
                assert.equal(
                  compiled.allowed(a, b, q),
                  reference.allowed(a, b, q),
                  `${cluster.endpoints[a]?.id} → ${cluster.endpoints[b]?.id} ${JSON.stringify(QUERIES[q])}`,
                );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("equals every pair's own answer with Calico's and Cilium's policies (compiled, and by equivalence classes)", () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 2, maxClusterPolicies: 1 }),
        calicoArb(3),
        ciliumArb(2),
        (objects, calico, cilium) => {
          const cluster = clusterOf([...objects, ...calico, ...cilium]);
          const pairwise = computeMatrix(cluster, { queries: QUERIES, useClasses: false });
          const classes = computeMatrix(cluster, { queries: QUERIES, useClasses: true });
          const compiled = computeMatrix(cluster, { queries: QUERIES, useClasses: true, engine: 'compiled' });
          const ports = computeMatrix(cluster, { queries: [], useClasses: true });
          const pairPorts = computeMatrix(cluster, { queries: [], useClasses: false });
          const n = cluster.endpoints.length;
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++) {
              const where = `${cluster.endpoints[a]?.id} → ${cluster.endpoints[b]?.id}`;
              for (let q = 0; q < QUERIES.length; q++) {
                assert.equal(
                  classes.allowed(a, b, q),
                  pairwise.allowed(a, b, q),
                  `${where} ${JSON.stringify(QUERIES[q])}`,
                );
                assert.equal(
                  compiled.allowed(a, b, q),
                  pairwise.allowed(a, b, q),
                  `compiled ${where} ${JSON.stringify(QUERIES[q])}`,
                );
              }
              assert.deepEqual(ports.ports(a, b), pairPorts.ports(a, b), where);
            }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('gives the reference port sets on random clusters (tiered policies too), with and without classes', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 3 }),
        fc.boolean(),
        (objects, useClasses) => {
          const cluster = clusterOf(objects);
          const reference = computeMatrix(cluster, { queries: [], useClasses });
          const compiled = computeMatrix(cluster, { queries: [], useClasses, engine: 'compiled' });
          assert.equal(compiled.stats.engine, 'compiled');
          const n = cluster.endpoints.length;
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++)
              assert.deepEqual(
                compiled.ports(a, b),
                reference.ports(a, b),
                `${cluster.endpoints[a]?.id} → ${cluster.endpoints[b]?.id}`,
              );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('prints the same matrix from the command line, per port and as port sets', async () => {
    const args = [
      'matrix',
      '-f',
      'examples/shop',
      'examples/shop-running',
      '--port',
      '8080',
      '--port',
      '53/UDP',
    ];
    const reference = await cli(args);
    const compiled = await cli([...args, '--engine', 'compiled']);
    assert.equal(compiled.code, 0, compiled.stderr);
    const untimed = (text: string): string => text.replace(/[0-9.]+ ms/g, '<time>');
    assert.equal(untimed(compiled.stdout), untimed(reference.stdout));
    // Port sets too (the compiled tables answer them port atom by port atom).
    const sets = await cli([
      'matrix',
      '-f',
      'examples/shop',
      'examples/shop-running',
      '--engine',
      'compiled',
    ]);
    assert.equal(sets.code, 0, sets.stderr);
    assert.equal(sets.stdout, (await cli(['matrix', '-f', 'examples/shop', 'examples/shop-running'])).stdout);
  });

  it('check --engine compiled gives the same verdict, with the reference explanation', async () => {
    const base = ['check', '-f', 'examples/shop', 'examples/shop-running', '--port', '8000'];
    for (const [from, to] of [
      ['shop/frontend-7c9d-x2k4p', 'shop/api-5f6b-m9w1c'],
      ['shop/db-0', 'shop/api-5f6b-m9w1c'],
    ] as const) {
      const reference = await cli([...base, '--from', from, '--to', to]);
      const compiled = await cli([...base, '--from', from, '--to', to, '--engine', 'compiled']);
      assert.equal(compiled.code, reference.code);
      assert.equal(compiled.stdout, reference.stdout);
    }
  });
});
