/**
 * `--max-output` outside the matrix: `explain`, `lint` and `compile` measure their output before
 * writing it, and one over the limit is refused (exit 2, nothing on stdout) with its size and what
 * asks for less; `--force` (or a limit it fits) writes it byte for byte as without a limit.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

/** 30 pods, every one isolated by a policy of its own. */
function objects(): Raw[] {
  return [
    namespace('shop'),
    ...Array.from({ length: 30 }, (_, i) =>
      pod('shop', `pod-${i}`, { app: `app-${i}` }, { ips: [`10.0.0.${i + 1}`] }),
    ),
    ...Array.from({ length: 30 }, (_, i) =>
      policy('shop', `policy-${i}`, {
        podSelector: { matchLabels: { app: `app-${i}` } },
        ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 'no-such-port' }] }],
      }),
    ),
  ];
}

describe('--max-output outside the matrix', () => {
  for (const [command, advice] of [
    ['explain', /--pod NS\/NAME/],
    ['lint', /--only CODES/],
    ['compile', /--node NAME/],
  ] as const)
    it(`${command}: refused over the limit with its size and advice; written whole with --force`, async (t) => {
      const file = join(await tempDir(t, 'palisade-limit-'), 'objects.yaml');
      await writeFile(
        file,
        objects()
          .map((o) => JSON.stringify(o))
          .join('\n---\n'),
      );
      const whole = await cli([command, '-f', file]);
      const bytes = Buffer.byteLength(whole.stdout);
      assert.ok(bytes > 200, `${command} writes something to limit`);
      const limit = String(Math.floor(bytes / 2));
      const refused = await cli([command, '-f', file, '--max-output', limit]);
      assert.equal(refused.code, 2);
      assert.equal(refused.stdout, '');
      assert.match(
        refused.stderr,
        /the output would be (about|more than) [\d.]+ k?B .*more than --max-output [\d.]+ k?B; nothing was written/,
      );
      assert.match(refused.stderr, advice);
      assert.match(refused.stderr, /--force/);
      const forced = await cli([command, '-f', file, '--max-output', limit, '--force']);
      assert.equal(forced.code, whole.code);
      assert.equal(forced.stdout, whole.stdout);
      const json = await cli([command, '-f', file, '-o', 'json', '--max-output', limit]);
      assert.equal(json.code, 2);
      assert.equal(json.stdout, '');
    });
});
