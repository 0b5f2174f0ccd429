/**
 * The rewriting behind `node scripts/bench-tables.mjs`: a table in, figure records in, the same
 * table out with only the marked rows' value and measured cells changed; an id no row carries,
 * or a row whose command ran without reporting its id, is an error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatValue, meetsTarget, regenerableRows, rewriteTables } from '../../bench/tables.ts';

const TABLE = [
  '# Benchmarks',
  '',
  '| figure | command | target | value | measured |',
  '| --- | --- | --- | --- | --- |',
  '| lookups <!-- fig:classifier.random-pairs --> | `npm run bench -- classifier` | ≥ 10 M/s | 12.9 M/s | 2026-11-24, load 1.5 |',
  '| lint <!-- fig:lint.x0.1 --> | `npm run bench -- lint --scale 0.1 --runs 3` | ≤ 10 s | 1,730 ms | 2026-11-23, load 2.0 |',
  '| by hand | `npm run bench -- ebpf` | ≥ 95 % | 96 % | 2026-11-24, load 1.2 |',
  '',
  'Prose | with a pipe <!-- fig:not.a.row -->',
].join('\n');

describe('bench tables', () => {
  it('finds the rows a benchmark regenerates, with their commands', () => {
    assert.deepEqual(regenerableRows(TABLE), [
      { id: 'classifier.random-pairs', command: 'classifier', bench: 'classifier' },
      { id: 'lint.x0.1', command: 'lint --scale 0.1 --runs 3', bench: 'lint' },
    ]);
  });

  it('rewrites the value and measured cells of the reported rows, and nothing else', () => {
    const out = rewriteTables(
      TABLE,
      [
        { id: 'classifier.random-pairs', value: 7.0838, unit: 'M/s', load: 5.15 },
        { id: 'lint.x0.1', value: 2345.6, unit: 'ms', load: 4.04 },
      ],
      { date: '2026-11-29', expected: ['classifier.random-pairs', 'lint.x0.1'] },
    );
    const lines = out.split('\n');
    assert.equal(
      lines[4],
      '| lookups <!-- fig:classifier.random-pairs --> | `npm run bench -- classifier` | ≥ 10 M/s | 7.08 M/s — **not met** | 2026-11-29, load 5.2 |',
    );
    assert.equal(
      lines[5],
      '| lint <!-- fig:lint.x0.1 --> | `npm run bench -- lint --scale 0.1 --runs 3` | ≤ 10 s | 2,346 ms — met | 2026-11-29, load 4.0 |',
    );
    const others = (text: string) => text.split('\n').filter((_, i) => i !== 4 && i !== 5);
    assert.deepEqual(others(out), others(TABLE));
  });

  it('refuses a record whose id no row carries', () => {
    assert.throws(
      () =>
        rewriteTables(TABLE, [{ id: 'classifier.renamed', value: 1, unit: 'M/s' }], { date: '2026-11-29' }),
      /unknown figure id classifier\.renamed/,
    );
    // An id in prose, outside a table, is not a row either.
    assert.throws(
      () => rewriteTables(TABLE, [{ id: 'not.a.row', value: 1, unit: 'ms' }], { date: '2026-11-29' }),
      /unknown figure id not\.a\.row/,
    );
  });

  it('refuses a run that did not report a row it was run for', () => {
    assert.throws(
      () =>
        rewriteTables(TABLE, [{ id: 'lint.x0.1', value: 1, unit: 'ms' }], {
          date: '2026-11-29',
          expected: ['classifier.random-pairs', 'lint.x0.1'],
        }),
      /no figure reported for classifier\.random-pairs/,
    );
  });

  it('refuses an id on two rows', () => {
    const twice = `${TABLE}\n\n| figure | value | measured |\n| - | - | - |\n| again <!-- fig:lint.x0.1 --> | x | y |`;
    assert.throws(() => regenerableRows(twice), /lint\.x0\.1 is on more than one row/);
  });

  it('judges one-bound targets across units, and leaves others unjudged', () => {
    assert.equal(meetsTarget(2345, 'ms', '≤ 10 s'), true);
    assert.equal(meetsTarget(12.5, 's', '≤ 10 s'), false);
    assert.equal(meetsTarget(7849, 'events/s', '≥ 5,000/s'), true);
    assert.equal(meetsTarget(2130, 'events/s', '≥ 5,000/s'), false);
    assert.equal(meetsTarget(1100, 'MiB', '≤ 1.5 GB'), true);
    assert.equal(meetsTarget(1500, 'MiB', '≤ 1.5 GB'), false);
    assert.equal(meetsTarget(0.05, 'ms', 'median ≤ 1 ms, p99 ≤ 20 ms'), undefined);
    assert.equal(meetsTarget(3, 'ms', '≥ 10 M/s'), undefined);
    assert.equal(meetsTarget(96, '%', '≥ 95 %'), undefined);
    // Several clauses: the one in the value's kind of unit, parentheses aside.
    assert.equal(meetsTarget(1969, 'ms', '≤ 3 s, stable'), true);
    assert.equal(meetsTarget(4200, 'ms', '≤ 6 s, ≤ 1.5 GB'), true);
    assert.equal(meetsTarget(1200, 'MiB', '≤ 6 s, ≤ 1.5 GB'), true);
    assert.equal(meetsTarget(11, 's', '≤ 10 s (Antrea 10.7 s)'), false);
    assert.equal(meetsTarget(3, 'ms', '≤ 10 ms median, ≤ 30 ms p99'), undefined);
  });

  it('prints figures with at most three significant digits, thousands separated', () => {
    assert.equal(formatValue(12345.6, 'ms'), '12,346 ms');
    assert.equal(formatValue(42.17, 'ms'), '42.2 ms');
    assert.equal(formatValue(7.0838, 'M/s'), '7.08 M/s');
    assert.equal(formatValue(0.0543, 'ms'), '0.0543 ms');
    assert.equal(formatValue(0.5, 'ms'), '0.500 ms');
    assert.equal(formatValue(2.5, ''), '2.50');
  });
});
