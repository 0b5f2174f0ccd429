/**
 * `explain --by class`, and `--by auto` at scale: a block per class named as matrix names them,
 * its members listed in the versioned JSON shape; auto keeps every endpoint for small inputs and
 * for JSON, and says classes instead past 1,000 endpoints (when at most half as many) or past
 * `--max-output` (when fewer).
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { A_FROM_B, splitPods, writeObjects } from '../helpers/split-pods.ts';

async function file(t: TestContext, count: number): Promise<string> {
  return writeObjects(await tempDir(t, 'palisade-explain-classes-'), [...splitPods(count), A_FROM_B]);
}

describe('explain per class', () => {
  it('--by class: one block per class, named apart, with its members; JSON lists every member', async (t) => {
    const path = await file(t, 10);
    const text = await cli(['explain', '-f', path, '--by', 'class']);
    assert.equal(text.code, 0, text.stderr);
    const headers = text.stdout.split('\n').filter((l) => l !== '' && !l.startsWith(' '));
    assert.deepEqual(headers, [
      'default/pod-* app=a (5 pods) (c1: default/pod-0, default/pod-2, default/pod-4, default/pod-6, default/pod-8; all app=a)',
      'default/pod-* app=b (5 pods) (c2: default/pod-1, default/pod-3, default/pod-5, default/pod-7, default/pod-9; all app=b)',
      '10 endpoints in 2 classes of endpoints no policy tells apart, each class explained once (--by endpoint for every endpoint)',
    ]);
    assert.match(text.stdout, /ingress: isolated by default\/a-from-b; 1 rule allows traffic/);
    const json = await cli(['explain', '-f', path, '--by', 'class', '-o', 'json']);
    const parsed = JSON.parse(json.stdout) as {
      format: string;
      classes: { id: string; size: number; members: string[]; ingress: { isolated: boolean } }[];
      summary: { classes: number; endpoints: number };
    };
    assert.equal(parsed.format, 'palisade.explain.classes/v1');
    assert.deepEqual(parsed.summary, { classes: 2, endpoints: 10 });
    assert.deepEqual(
      parsed.classes.map((c) => [c.id, c.size, c.members.length, c.ingress.isolated]),
      [
        ['c1', 5, 5, true],
        ['c2', 5, 5, false],
      ],
    );
  });

  it('--by auto: every endpoint when small, the same as --by endpoint', async (t) => {
    const path = await file(t, 10);
    const auto = await cli(['explain', '-f', path]);
    const each = await cli(['explain', '-f', path, '--by', 'endpoint']);
    assert.equal(auto.stdout, each.stdout);
    assert.equal(auto.stderr, '');
    assert.match(auto.stdout, /^default\/pod-0 \(Pod; 10\.0\.0\.1; app=a,shard=s-0\)/);
  });

  it('--by auto: classes past 1,000 endpoints, said on stderr; JSON keeps its shape', async (t) => {
    const path = await file(t, 1200);
    const auto = await cli(['explain', '-f', path]);
    assert.equal(auto.code, 0);
    assert.match(auto.stderr, /1,200 endpoints behave as 2 classes .*--by endpoint for every endpoint/);
    assert.match(
      auto.stdout,
      /^default\/pod-\* app=a \(600 pods\) \(c1: default\/pod-0, .* and 594 more; all app=a\)$/m,
    );
    assert.equal(auto.stdout, (await cli(['explain', '-f', path, '--by', 'class'])).stdout);
    const json = JSON.parse((await cli(['explain', '-f', path, '-o', 'json'])).stdout) as {
      endpoints: unknown[];
    };
    assert.equal(json.endpoints.length, 1200);
  });

  it('--by auto: classes where the text per endpoint would pass --max-output', async (t) => {
    const path = await file(t, 40);
    const each = await cli(['explain', '-f', path, '--by', 'endpoint']);
    const classes = await cli(['explain', '-f', path, '--by', 'class']);
    const limit = String(Buffer.byteLength(classes.stdout) + 10);
    assert.ok(Buffer.byteLength(each.stdout) > Number(limit));
    const auto = await cli(['explain', '-f', path, '--max-output', limit]);
    assert.equal(auto.code, 0);
    assert.equal(auto.stdout, classes.stdout);
    assert.match(auto.stderr, /behave as 2 classes .*--by endpoint --force for every endpoint/);
    const refused = await cli(['explain', '-f', path, '--by', 'endpoint', '--max-output', limit]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--by class \(2 classes of endpoints no policy tells apart\)/);
  });
});
