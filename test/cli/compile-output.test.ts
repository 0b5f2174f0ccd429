/**
 * `compile`'s text output is made as it is written: line by line, each pod, table or group's
 * lines handed out before the next is formatted (at shape a scale the whole text is ~58 MB), and
 * byte for byte the text `formatCompileText` gives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileTextLines, formatCompileText, type CompileReport } from '../../src/analysis/index.ts';
import { PLAIN as plainStyle } from '../../src/analysis/format/style.ts';
import { cli } from '../helpers/cli.ts';

function report(pods: number): CompileReport {
  return {
    pods: Array.from({ length: pods }, (_, i) => ({ id: `ns/pod-${i}`, ingress: 'aaaa' })),
    postponed: [],
    tables: [],
    tiers: [],
    usage: new Map(),
    groups: [{ key: 'ns=ns;pod=app=a', members: [{ pod: 'ns/pod-0', ips: ['10.0.0.1'], port: 80 }] }],
    stats: { pods, tables: 0, rules: 0, groups: 1, sharedTableRatio: 0, millis: 1 },
  };
}

describe('compile text output', () => {
  it('hands out the first pod line before reading the rest of the report', () => {
    const partial = { ...report(3) };
    // The tables are read only after every pod line is out.
    Object.defineProperty(partial, 'tables', {
      get() {
        throw new Error('tables read before the pod lines were written');
      },
    });
    const lines = compileTextLines(partial, plainStyle, false);
    assert.equal(lines.next().value, 'pods (3 compiled)\n');
    assert.equal(lines.next().value, '  ns/pod-0  ingress: aaaa  egress: open\n');
    assert.throws(() => [...lines], /tables read before/);
  });

  it('joined, is the text formatCompileText gives', () => {
    const whole = report(5);
    assert.equal(
      [...compileTextLines(whole, plainStyle, true)].join(''),
      formatCompileText(whole, plainStyle, true),
    );
  });

  it('palisade compile prints it unchanged', async () => {
    const run = await cli(['compile', '-f', 'examples/shop']);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^pods \(\d+ compiled/);
    assert.match(run.stdout, /\naddress groups \(\d+\)\n/);
    assert.ok(run.stdout.endsWith('\n') && !run.stdout.endsWith('\n\n'));
  });
});
