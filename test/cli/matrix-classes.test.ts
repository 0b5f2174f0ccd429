/**
 * The matrix per class (`--by class`, and `--by auto` at scale): a class pair's line stands for
 * every pair of its members, so expanding the lines gives the matrix of every pod pair; each line
 * says which classes it is about (names that would collide are told apart); the versioned JSON
 * shape lists every member; and rows whose output would pass `--max-output` are printed per class
 * instead of refused, when the classes are fewer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classReport } from '../../src/analysis/class-view.ts';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import { formatPortSet, isNoPorts } from '../../src/semantics/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, type Raw } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { A_FROM_B, splitPods, writeObjects } from '../helpers/split-pods.ts';

/** `count` split pods; ingress to app=a only from app=b. */
const split = (count: number): Raw[] => [...splitPods(count), A_FROM_B];

describe('matrix per class', () => {
  it('class pairs expand to exactly the allowed pod pairs, with their ports', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 4, maxClusterPolicies: 2 }),
        fc.constantFrom('compiled' as const, 'reference' as const),
        (objects, engine) => {
          const cluster = clusterOf(objects);
          const endpoints = cluster.endpoints.filter((e) => e.kind === 'Pod');
          const truth = computeMatrix(cluster, { endpoints, queries: [], engine: 'reference' });
          const report = classReport(computeMatrix(cluster, { endpoints, queries: [], engine }));
          const index = new Map(endpoints.map((e, i) => [e, i]));
          const listed = new Map<string, string>();
          for (const { from, to, ports } of report.pairs())
            for (const a of report.rows[from]?.members ?? [])
              for (const b of report.rows[to]?.members ?? [])
                listed.set(`${index.get(a)},${index.get(b)}`, formatPortSet(ports));
          endpoints.forEach((_, i) =>
            endpoints.forEach((_, j) => {
              const ports = truth.ports(i, j);
              const expected = isNoPorts(ports) ? undefined : formatPortSet(ports);
              assert.equal(listed.get(`${i},${j}`), expected, `${i} → ${j}`);
            }),
          );
        },
      ),
      { numRuns: propertyRuns(60) },
    );
  });

  it('tells apart classes whose members would name them alike', async (t) => {
    const file = await writeObjects(await tempDir(t, 'palisade-classes-'), split(6));
    const { code, stdout } = await cli(['matrix', '-f', file, '--by', 'class']);
    assert.equal(code, 0);
    assert.match(stdout, /^default\/pod-\* app=b \(3 pods\) → default\/pod-\* app=a \(3 pods\): all$/m);
    assert.doesNotMatch(stdout, /default\/pod-\* \(3 pods\)/);
    const json = await cli(['matrix', '-f', file, '--by', 'class', '-o', 'json']);
    const parsed = JSON.parse(json.stdout) as {
      format: string;
      classes: { label: string; size: number; members: string[] }[];
    };
    assert.equal(parsed.format, 'palisade.matrix.classes/v1');
    assert.deepEqual(
      parsed.classes.map((c) => [c.label, c.members.length]),
      [
        ['default/pod-* app=a (3 pods)', 3],
        ['default/pod-* app=b (3 pods)', 3],
      ],
    );
  });

  it('--by auto prints classes where the rows would pass --max-output; other views still refuse', async (t) => {
    const file = await writeObjects(await tempDir(t, 'palisade-classes-'), split(40));
    const auto = await cli(['matrix', '-f', file, '--max-output', '10kB']);
    assert.equal(auto.code, 0);
    assert.match(auto.stderr, /its 40 rows behave as 2 classes/);
    assert.equal(auto.stdout.split('\n').filter((l) => l.includes('→')).length, 3);
    const rows = await cli(['matrix', '-f', file, '--max-output', '10kB', '--by', 'workload']);
    assert.equal(rows.code, 2);
    assert.match(rows.stderr, /nothing was written.*--by class \(2 classes/);
    const json = await cli(['matrix', '-f', file, '--max-output', '10kB', '-o', 'json']);
    assert.equal(json.code, 2);
    assert.equal(json.stdout, '');
    // Under the limit, the rows as before.
    const small = await cli(['matrix', '-f', file]);
    assert.equal(small.code, 0);
    assert.equal(small.stderr, '');
    assert.match(small.stdout, /^default\/pod-1\[Pod\] → default\/pod-0\[Pod\]: all$/m);
  });
});
