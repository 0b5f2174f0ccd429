/**
 * `diff --by class`, and `--by auto` at scale: lines per class pair of the two inputs, with how
 * many endpoint pairs they stand for; the versioned JSON shape lists the classes it names and
 * each line's pairs; auto keeps lines per workload when small and for JSON.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { A_FROM_B, splitPods, writeObjects } from '../helpers/split-pods.ts';

async function inputs(t: TestContext, count: number): Promise<string[]> {
  const dir = await tempDir(t, 'palisade-diff-classes-');
  return [
    '-f',
    await writeObjects(dir, splitPods(count), 'before.yaml'),
    '--to',
    await writeObjects(dir, [...splitPods(count), A_FROM_B], 'after.yaml'),
  ];
}

describe('diff per class', () => {
  it('--by class: a line per class pair, with the endpoint pairs it stands for', async (t) => {
    const args = await inputs(t, 6);
    const text = await cli(['diff', ...args, '--by', 'class', '--no-addresses']);
    assert.equal(text.code, 1);
    assert.equal(
      text.stdout,
      'removed default/pod-* app=a (3 pods) → default/pod-* app=a (3 pods)  all  (NetworkPolicy default/a-from-b)\n' +
        '\n1 connection differs: 0 added, 1 removed, 0 changed\n' +
        '1 line stands for 6 endpoint pairs, by classes of endpoints no policy tells apart in either input (--by pod for each pair)\n',
    );
    const json = JSON.parse(
      (await cli(['diff', ...args, '--by', 'class', '--no-addresses', '-o', 'json'])).stdout,
    ) as {
      format: string;
      classes: { id: string; size: number; members: string[] }[];
      connections: { from: string; to: string; fromKind: string; pairs: number }[];
      summary: { removed: number; endpointPairs: number };
    };
    assert.equal(json.format, 'palisade.diff.classes/v1');
    assert.deepEqual(json.classes, [
      {
        id: 'c1',
        label: 'default/pod-* app=a (3 pods)',
        namespace: 'default',
        size: 3,
        members: ['default/pod-0', 'default/pod-2', 'default/pod-4'],
      },
    ]);
    assert.deepEqual(
      json.connections.map((c) => [c.from, c.fromKind, c.to, c.pairs]),
      [['c1', 'Class', 'c1', 6]],
    );
    assert.deepEqual(json.summary, { added: 0, removed: 1, changed: 0, endpointPairs: 6 });
  });

  it('--by auto: lines per workload when few, and always for JSON', async (t) => {
    const args = await inputs(t, 6);
    const auto = await cli(['diff', ...args]);
    assert.equal(auto.stdout, (await cli(['diff', ...args, '--by', 'workload'])).stdout);
    assert.equal(auto.stderr, '');
  });

  it('--by auto: per class past 10,000 lines, said on stderr', async (t) => {
    const args = await inputs(t, 210);
    const auto = await cli(['diff', ...args]);
    assert.equal(auto.code, 1);
    assert.match(
      auto.stderr,
      /^diff: [\d,]+ connections differ between workloads; by classes of endpoints .* they are \d+ lines \(--by workload/,
    );
    assert.equal(auto.stdout, (await cli(['diff', ...args, '--by', 'class'])).stdout);
    const json = JSON.parse((await cli(['diff', ...args, '-o', 'json'])).stdout) as {
      connections: unknown[];
    };
    assert.ok(json.connections.length > 10_000);
  });
});
