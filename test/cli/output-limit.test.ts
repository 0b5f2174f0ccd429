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

/** Three pods, one of them sending to 60 addresses outside the cluster, each on ports of its own. */
function manyRanges(portsPerRange: number): Raw[] {
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
        ports: Array.from({ length: portsPerRange }, (_, k) => ({ port: 1000 + 100 * i + 2 * k })),
      })),
    }),
  ];
}

/**
 * How close the limit may come to what is written and still be kept: listings are walked with
 * their port lists (within 10 %), tables and per-port lines counted by cell (within 40 %).
 */
const MARGIN = { listing: 0.1, perPort: 0.4 };

describe('--max-output counts the matrix’s address ranges', () => {
  const cases = ['text', 'csv', 'md', 'json'].flatMap((format) => [
    { format, port: [] as string[], portsPerRange: 1 },
    { format, port: ['--port', '1000'], portsPerRange: 1 },
    // Long port lists on every range's line (the walk reads them; a size per line did not).
    { format, port: [] as string[], portsPerRange: 40 },
  ]);
  for (const { format, port, portsPerRange } of cases)
    it(`-o ${format} ${port.join(' ') || '(every port)'}, ${portsPerRange} port(s) a range: refused just under what the ranges' lines make it, written just over`, async (t) => {
      const file = join(await tempDir(t, 'palisade-limit-'), 'objects.yaml');
      await writeFile(
        file,
        manyRanges(portsPerRange)
          .map((o) => JSON.stringify(o))
          .join('\n---\n'),
      );
      const ask = ['matrix', '-f', file, '-o', format, ...port, '--addresses', 'all'];
      const whole = Buffer.byteLength((await cli(ask)).stdout);
      const margin = port.length ? MARGIN.perPort : MARGIN.listing;
      const rowsOnly = await cli(['matrix', '-f', file, '-o', format, ...port, '--addresses', 'none']);
      assert.ok(Buffer.byteLength(rowsOnly.stdout) < whole / 10, 'the rows alone are a small part');
      const under = Math.floor(whole * (1 - margin));
      const refused = await cli([...ask, '--max-output', String(under)]);
      assert.equal(refused.code, 2, `refused at ${under} B for ${whole} B: ${refused.stderr}`);
      assert.equal(refused.stdout, '');
      assert.match(refused.stderr, /the output would be (about|more than) [\d.]+ k?B/);
      assert.match(refused.stderr, /--addresses none/);
      const over = Math.ceil(whole * (1 + margin));
      const written = await cli([...ask, '--max-output', String(over)]);
      assert.equal(written.code, 0, `written at ${over} B for ${whole} B: ${written.stderr}`);
      assert.equal(Buffer.byteLength(written.stdout), whole);
    });
});
