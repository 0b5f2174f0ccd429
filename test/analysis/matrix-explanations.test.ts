/**
 * The matrix prints verdicts, never explanations, so it must not build any: putting rules and
 * peers into words was two thirds of the reference matrix's time (issue 22 §2 — 5,000 selector
 * policies × 1,000 pods did not finish in 15 minutes). The semantics layer counts every
 * explanation it builds; these tests hold the matrix's count to zero on random clusters (every
 * tier, dual-stack, named ports) and through the command line, and check that `check` and
 * `explain` (which print them) still build theirs — so the counter is known to count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import type { PortQuery } from '../../src/analysis/types.ts';
import { explanationsBuilt } from '../../src/semantics/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 60);
const QUERIES: PortQuery[] = [
  { port: 80, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
  { port: 'http', protocol: 'TCP' },
];

/** How many explanations `work` built. */
function explanationsDuring(work: () => void): number {
  const before = explanationsBuilt();
  work();
  return explanationsBuilt() - before;
}

async function explanationsDuringAsync(work: () => Promise<void>): Promise<number> {
  const before = explanationsBuilt();
  await work();
  return explanationsBuilt() - before;
}

describe('the matrix builds no explanation', () => {
  it('per port and as port sets, on random clusters, through the reference evaluator', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 3 }),
        fc.boolean(),
        (objects, useClasses) => {
          const cluster = clusterOf(objects);
          const built = explanationsDuring(() => {
            const perPort = computeMatrix(cluster, { queries: QUERIES, useClasses, engine: 'reference' });
            const portSets = computeMatrix(cluster, { queries: [], useClasses, engine: 'reference' });
            // Read every answer: a lazy matrix must not explain on the way out either.
            const n = cluster.endpoints.length;
            for (let a = 0; a < n; a++)
              for (let b = 0; b < n; b++) {
                for (let q = 0; q < QUERIES.length; q++) perPort.allowed(a, b, q);
                portSets.ports(a, b);
              }
          });
          assert.equal(built, 0);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('from the command line, by workload and by pod, per port and as port sets, every engine', async () => {
    for (const engine of ['reference', 'compiled', 'auto'])
      for (const extra of [['--port', '8080', '--port', '53/UDP'], [], ['--by', 'pod', '-o', 'json']]) {
        const args = ['matrix', '-f', 'examples/shop', 'examples/shop-running', '--engine', engine, ...extra];
        let code = -1;
        const built = await explanationsDuringAsync(async () => {
          code = (await cli(args)).code;
        });
        assert.equal(code, 0, args.join(' '));
        assert.equal(built, 0, args.join(' '));
      }
    const tiers = await explanationsDuringAsync(async () => {
      await cli(['matrix', '-f', 'examples/tiers', '--engine', 'reference', '--port', '80']);
    });
    assert.equal(tiers, 0, 'examples/tiers');
  });

  it('while check and explain, which print them, still build theirs (the counter counts)', async () => {
    const checked = await explanationsDuringAsync(async () => {
      await cli([
        'check',
        '-f',
        'examples/shop',
        '--from',
        'shop/frontend',
        '--to',
        'shop/api',
        '--port',
        '8080',
      ]);
    });
    assert.ok(checked > 0, `check built ${checked} explanations`);
    const explained = await explanationsDuringAsync(async () => {
      await cli(['explain', '-f', 'examples/shop', 'shop/api']);
    });
    assert.ok(explained > 0, `explain built ${explained} explanations`);
  });
});
