/**
 * Large matrix outputs: written piece by piece with backpressure (memory stays bounded however
 * slow the reader), the JSON contract unchanged, and a text table wider than the terminal
 * refused unless asked for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import { writeStreaming } from '../../src/cli/io.ts';
import { cli } from '../helpers/cli.ts';

const EXAMPLE = 'examples/shop';

describe('matrix output', () => {
  it('waits for a full output to drain instead of queueing everything', async () => {
    const highWaterMark = 1 << 16;
    let maxQueued = 0;
    let received = 0;
    // A reader that takes one chunk per event-loop turn: far slower than the writer.
    const slow = new Writable({
      highWaterMark,
      write(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        setImmediate(callback);
      },
    });
    const out = {
      write: (chunk: string) => {
        const ok = slow.write(chunk);
        maxQueued = Math.max(maxQueued, slow.writableLength);
        return ok;
      },
      drained: () => once(slow, 'drain').then(() => undefined),
    };
    const piece = `${'x'.repeat(99)}\n`;
    function* pieces(): Iterable<string> {
      for (let i = 0; i < 200_000; i++) yield piece;
    }
    await writeStreaming(out, pieces());
    slow.end();
    await once(slow, 'finish');
    assert.equal(received, 200_000 * piece.length);
    // At most one batch beyond the stream's own buffer: never the 20 MB written.
    assert.ok(maxQueued <= 2 * highWaterMark + piece.length, `queued ${maxQueued} bytes`);
  });

  it('keeps the -o json contract byte for byte (per port and port sets)', async () => {
    const perPort = await cli(['matrix', '-f', EXAMPLE, '--port', '8000', '--port', '53/UDP', '-o', 'json']);
    const parsed = JSON.parse(perPort.stdout) as {
      results: Record<string, unknown>[];
      addresses: Record<string, unknown>[];
    };
    assert.equal(parsed.results.length, 6 * 6 * 2);
    // The pairs, then the connections with the ranges outside the cluster, in the same form.
    const lines = (list: Record<string, unknown>[]): string => list.map((r) => JSON.stringify(r)).join(',\n');
    const expected = `{"results":[\n${lines(parsed.results)}\n],"addresses":[\n${lines(parsed.addresses)}\n]}\n`;
    assert.equal(perPort.stdout, expected);
    const fields = ['from', 'to', 'port', 'protocol', 'allowed', 'fromKind', 'toKind'];
    assert.deepEqual(Object.keys(parsed.results[0] ?? {}), fields);
    assert.deepEqual(Object.keys(parsed.addresses[0] ?? {}), fields);
    // Both ranges the shop's policies tell apart, each way, for each of its six workloads.
    assert.equal(parsed.addresses.length, 2 * 2 * 6 * 2);
    const sets = await cli(['matrix', '-f', EXAMPLE, '-o', 'json']);
    const setsParsed = JSON.parse(sets.stdout) as { results: Record<string, unknown>[] };
    assert.equal(setsParsed.results.length, 36);
  });

  it('refuses a text table wider than the terminal, unless --wide', async () => {
    const args = ['matrix', '-f', EXAMPLE, '--port', '80'];
    const narrow = await cli(args, { tty: true, columns: 40 });
    assert.equal(narrow.code, 2);
    assert.match(
      narrow.stderr,
      /characters wide and the terminal 40: use --group-by namespace \(a row per namespace\), -o csv/,
    );
    assert.equal(narrow.stdout, '');
    const wide = await cli([...args, '--wide'], { tty: true, columns: 40 });
    assert.equal(wide.code, 0);
    assert.match(wide.stdout, /TCP\/80/);
    assert.equal((await cli(args, { tty: true, columns: 200 })).code, 0);
    // Not a terminal (a file, a pipe): printed whatever its width.
    assert.equal((await cli(args, { columns: 40 })).code, 0);
    // Port sets are one line per pair, never a table.
    assert.equal((await cli(['matrix', '-f', EXAMPLE], { tty: true, columns: 40 })).code, 0);
    // A terminal that does not say its width (0) is not judged.
    assert.equal((await cli(args, { tty: true, columns: 0 })).code, 0);
  });

  it('--group-by namespace: a row per namespace, allowed where every pod pair is; not for -o json', async () => {
    const args = ['matrix', '-f', EXAMPLE, '--port', '8000', '--port', '53/UDP', '--group-by', 'namespace'];
    const table = await cli(args, { tty: true, columns: 60, env: { NO_COLOR: '1' } });
    assert.equal(table.code, 0, table.stderr);
    const rows = table.stdout.split('\n').filter((l) => l.includes('[Namespace]'));
    assert.deepEqual(
      rows.slice(0, 4).map((l) => l.replace(/\s+/g, ' ').trim()),
      [
        // Columns 5 and 6: the two ranges outside the cluster the shop's policies tell apart.
        'kube-system[Namespace] . . X X . . 1',
        'monitoring[Namespace] . . X X . . 2',
        'payments[Namespace] X X X X X X 3',
        // shop → shop on 8000: the frontend may reach the api, no other pod pair: partial.
        'shop[Namespace] X X X ~ X X 4',
      ],
    );
    const csv = await cli([...args, '-o', 'csv']);
    assert.match(csv.stdout, /^shop\[Namespace\],kube-system\[Namespace\],53,UDP,true$/m);
    const json = await cli([...args, '-o', 'json']);
    assert.equal(json.code, 2);
    assert.match(json.stderr, /--group-by namespace applies to text, csv, md and the graph formats/);
  });
});
