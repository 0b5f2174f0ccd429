/**
 * `matrix --focus ns/name`: one workload, pod or Service and the rows it can connect with either
 * way, the cells among them as the whole matrix has them, in every format; a name that is nothing
 * in the input is a usage error that says which names are near.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';

const SHOP = ['-f', 'examples/shop'];

describe('matrix --focus', () => {
  it('keeps the row and its peers, with the cells the whole matrix has', async () => {
    const whole = await cli(['matrix', ...SHOP, '--port', '5432', '-o', 'json']);
    const focused = await cli(['matrix', ...SHOP, '--port', '5432', '--focus', 'shop/db', '-o', 'json']);
    assert.equal(focused.code, 0, focused.stderr);
    type Cell = { from: string; to: string; allowed: boolean };
    const cells = (text: string) => (JSON.parse(text) as { results: Cell[] }).results;
    const kept = cells(focused.stdout);
    // shop/db takes 5432 from shop/api only, and reaches nothing on it.
    assert.deepEqual([...new Set(kept.map((c) => c.from))].sort(), ['shop/api', 'shop/db']);
    assert.equal(kept.length, 4);
    const all = cells(whole.stdout);
    for (const cell of kept)
      assert.deepEqual(
        cell,
        all.find((c) => c.from === cell.from && c.to === cell.to),
      );
  });
  it('takes ns/name[Kind] and narrows the port lists too', async () => {
    const r = await cli(['matrix', ...SHOP, '--focus', 'payments/gateway[Deployment]']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^shop\/api\[Deployment\] → payments\/gateway\[Deployment\]: TCP 8443$/m);
    assert.doesNotMatch(r.stdout, /shop\/frontend/);
  });
  it('takes a Service: the pods behind it, as their workload', async () => {
    const args = ['matrix', ...SHOP, '--port', '8000', '-o', 'json', '--focus'];
    const byService = await cli([...args, 'shop/api[Service]']);
    const byWorkload = await cli([...args, 'shop/api[Deployment]']);
    assert.equal(byService.code, 0, byService.stderr);
    type Cell = { from: string; to: string; allowed: boolean };
    const cells = (JSON.parse(byService.stdout) as { results: Cell[] }).results;
    assert.ok(cells.some((c) => c.to === 'shop/api' && c.allowed));
    assert.equal(byService.stdout, byWorkload.stdout);
  });
  it('says which names are near when the name is none', async () => {
    const r = await cli(['matrix', ...SHOP, '--focus', 'db']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--focus: no pod or workload "db" in the input \(did you mean shop\/db\?\)/);
  });
});
