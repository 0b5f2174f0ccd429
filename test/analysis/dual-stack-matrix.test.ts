/**
 * Issue 19 §1.3, `matrix` on dual-stack pods: a pair allowed over IPv4 and denied over IPv6 (an
 * IPv4-only ipBlock) is shown as such — `4` in the table, `… over IPv4, … over IPv6` in port
 * sets, `byFamily` in JSON — while `allowed` keeps meaning "every family", and a single-family
 * cluster's output keeps its shape. Per-family answers of both engines are held to the
 * evaluator asked about one family at a time, on random clusters with dual-stack pods.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import type { Matrix, PortQuery } from '../../src/analysis/types.ts';
import { connectionFamilies, indexCluster, isAllowed, portSetHas } from '../../src/semantics/index.ts';
import type { Address } from '../../src/semantics/types.ts';
import type { Endpoint } from '../../src/model/types.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 100);
const INPUT = ['matrix', '-f', 'test/fixtures/dual-stack.yaml'];
const QUERIES: PortQuery[] = SAMPLE_PORTS.map(([port, protocol]) => ({ port, protocol }));
const at = (endpoint: Endpoint): Address => ({ kind: 'endpoint', endpoint });

function familiesDisagree(matrix: Matrix, n: number): boolean {
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++)
      for (let q = 0; q < QUERIES.length; q++) {
        const v4 = matrix.overFamily?.(a, b, q, 4);
        const v6 = matrix.overFamily?.(a, b, q, 6);
        if (v4 !== undefined && v6 !== undefined && v4 !== v6) return true;
      }
  return false;
}

describe('matrix on dual-stack pods', () => {
  it('the port table marks a pair allowed over one family only, with a legend', async () => {
    const r = await cli([...INPUT, '--port', '80', '--addresses', 'none']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.split('\n').slice(0, 4), [
      'TCP/80       1  2  3',
      'ds/a[Pod]    .  4  .  1',
      'ds/b[Pod]    .  4  X  2',
      'ds/c[Pod]    .  4  X  3',
    ]);
    assert.match(r.stdout, / 4 allowed over IPv4 only \(denied over IPv6\)/);
  });

  it('port sets say each family’s ports where they differ, and such a pair counts as connecting', async () => {
    const r = await cli(INPUT);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ds\/a\[Pod\] → ds\/b\[Pod\]: all over IPv4, none over IPv6$/m);
    assert.match(r.stdout, /^ds\/a\[Pod\] → ds\/c\[Pod\]: all$/m);
    assert.match(r.stdout, /7 of 9 ordered pairs/);
  });

  it('-o json keeps `allowed` (every family) and adds byFamily only where the families disagree', async () => {
    const r = await cli([...INPUT, '--port', '80', '-o', 'json']);
    const rows = (JSON.parse(r.stdout) as { results: Record<string, unknown>[] }).results;
    const row = (from: string, to: string) => rows.find((x) => x.from === from && x.to === to);
    assert.deepEqual(row('ds/a', 'ds/b'), {
      from: 'ds/a',
      to: 'ds/b',
      port: 80,
      protocol: 'TCP',
      allowed: false,
      fromKind: 'Pod',
      toKind: 'Pod',
      byFamily: [
        { family: 4, allowed: true },
        { family: 6, allowed: false },
      ],
    });
    assert.equal(row('ds/a', 'ds/c')?.byFamily, undefined);
    assert.equal(row('ds/b', 'ds/c')?.byFamily, undefined);
    const sets = await cli([...INPUT, '-o', 'json']);
    const setRows = (JSON.parse(sets.stdout) as { results: Record<string, unknown>[] }).results;
    const ab = setRows.find((x) => x.from === 'ds/a' && x.to === 'ds/b');
    assert.equal(ab?.allowed, false);
    assert.deepEqual(
      (ab?.byFamily as { family: number; allowed: boolean }[]).map((f) => [f.family, f.allowed]),
      [
        [4, true],
        [6, false],
      ],
    );
  });

  it('a single-family cluster prints no per-family fields or columns', async () => {
    for (const extra of [
      ['--port', '80', '-o', 'json'],
      ['-o', 'json'],
      ['--port', '80', '-o', 'csv'],
    ]) {
      const r = await cli(['matrix', '-f', 'examples/shop', ...extra]);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /byFamily|ipv4|ipv6/);
    }
  });

  it('per-family verdicts of both engines equal the evaluator asked about one family (random clusters)', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }),
        fc.boolean(),
        fc.constantFrom<'reference' | 'compiled'>('reference', 'compiled'),
        fc.boolean(),
        (objects, useClasses, engine, disagreeing) => {
          const cluster = clusterOf(objects);
          const index = indexCluster(cluster);
          const matrix = computeMatrix(cluster, { queries: QUERIES, useClasses, engine, byFamily: true });
          const eps = cluster.endpoints;
          const dual = eps.some((e) => new Set(e.ips.map((ip) => ip.family)).size > 1);
          assert.equal(matrix.overFamily !== undefined, dual);
          // Families disagree on few random clusters (one in forty): half the runs insist on one.
          if (disagreeing) fc.pre(dual && familiesDisagree(matrix, eps.length));
          if (!dual) return;
          const sets = computeMatrix(cluster, { queries: [], useClasses, engine, byFamily: true });
          for (let a = 0; a < eps.length; a++)
            for (let b = 0; b < eps.length; b++) {
              const src = at(eps[a] as Endpoint);
              const dst = at(eps[b] as Endpoint);
              const shared = connectionFamilies(src, dst).families;
              for (const family of [4, 6] as const) {
                const where = `${eps[a]?.id} → ${eps[b]?.id} IPv${family}`;
                if (!shared.includes(family)) {
                  assert.equal(matrix.overFamily?.(a, b, 0, family), undefined, where);
                  assert.equal(sets.portsOverFamily?.(a, b, family), undefined, where);
                  continue;
                }
                const ports = sets.portsOverFamily?.(a, b, family);
                assert.ok(ports, where);
                QUERIES.forEach(({ port, protocol }, q) => {
                  const expected = isAllowed(index, { src, dst, protocol, port: port as number, family });
                  assert.equal(
                    matrix.overFamily?.(a, b, q, family),
                    expected,
                    `${where} ${protocol}/${port}`,
                  );
                  assert.equal(portSetHas(ports, protocol, port as number), expected, `${where} ports`);
                });
              }
            }
        },
      ),
      { numRuns: RUNS, maxSkipsPerRun: 200 },
    );
  });

  it('by workload, a row pair is allowed over a family only when every pod pair sharing it is', async () => {
    const r = await cli([
      'matrix',
      '-f',
      'test/fixtures/dual-stack-workloads.yaml',
      '--port',
      '80',
      '--addresses',
      'none',
    ]);
    assert.equal(r.code, 0, r.stderr);
    // web's pods are both in the IPv4 range db admits; only one of job's is: not "over IPv4 only".
    assert.deepEqual(r.stdout.split('\n').slice(1, 4), [
      'ds/db[Pod]            4  .  .  1',
      'ds/job[Deployment]    X  .  .  2',
      'ds/web[Deployment]    4  .  .  3',
    ]);
  });
});
