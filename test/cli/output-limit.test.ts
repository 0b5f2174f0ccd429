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

/** Three pods, one of them sending to 60 addresses outside the cluster, each on its own port. */
function manyRanges(): Raw[] {
  return [
    namespace('shop'),
    ...Array.from({ length: 3 }, (_, i) =>
      pod('shop', `pod-${i}`, { app: `app-${i}` }, { ips: [`10.0.0.${i + 1}`], node: 'n1' }),
    ),
    policy('shop', 'out', {
      podSelector: { matchLabels: { app: 'app-0' } },
      policyTypes: ['Egress'],
      egress: Array.from({ length: 60 }, (_, i) => ({
        to: [{ ipBlock: { cidr: `198.51.100.${i}/32` } }],
        ports: [{ port: 1000 + i }],
      })),
    }),
  ];
}

/** The size a refusal states, in bytes. */
function statedBytes(stderr: string): number {
  const match = /the output would be (?:about|more than) ([\d.]+) (k?B)/.exec(stderr);
  assert.ok(match, stderr);
  return Number(match[1]) * (match[2] === 'kB' ? 1000 : 1);
}

describe('--max-output counts the matrix’s address ranges', () => {
  for (const format of ['text', 'csv', 'md', 'json'])
    for (const port of [[], ['--port', '1000']])
      it(`-o ${format} ${port.join(' ') || '(every port)'}: refused when the ranges' lines pass the limit, their size told`, async (t) => {
        const file = join(await tempDir(t, 'palisade-limit-'), 'objects.yaml');
        await writeFile(
          file,
          manyRanges()
            .map((o) => JSON.stringify(o))
            .join('\n---\n'),
        );
        const ask = ['matrix', '-f', file, '-o', format, ...port, '--addresses', 'all'];
        const whole = Buffer.byteLength((await cli(ask)).stdout);
        const limit = Math.floor(whole / 2);
        const rowsOnly = await cli(['matrix', '-f', file, '-o', format, ...port, '--addresses', 'none']);
        assert.ok(Buffer.byteLength(rowsOnly.stdout) < limit / 4, 'the rows alone are far under the limit');
        const refused = await cli([...ask, '--max-output', String(limit)]);
        assert.equal(refused.code, 2, refused.stderr);
        assert.equal(refused.stdout, '');
        assert.match(refused.stderr, /--addresses none/);
        const stated = statedBytes(refused.stderr);
        assert.ok(stated > whole * 0.7 && stated < whole * 1.4, `stated ${stated} B for ${whole} B written`);
        const forced = await cli([...ask, '--max-output', String(limit), '--force']);
        assert.equal(Buffer.byteLength(forced.stdout), whole);
      });
});
