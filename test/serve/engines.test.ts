/**
 * `palisade serve` on the shop with Calico's security tier (examples/engines/calico.yaml): the
 * API answers with the tier, as `check` does, and the matrix has the connection the tier denies.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveCopy, type Served } from './helpers.ts';

describe('palisade serve: Calico policy', () => {
  let served: Served;
  let input = '';
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(new URL(path, served.server.url));
    assert.equal(response.status, 200, `${path}: ${response.status}`);
    return (await response.json()) as T;
  };
  before(async () => {
    input = mkdtempSync(join(tmpdir(), `palisade-serve-engines-${process.pid}-`));
    cpSync('examples/shop', input, { recursive: true });
    cpSync('examples/engines/calico.yaml', join(input, 'calico.yaml'));
    served = await serveCopy(input);
  });
  after(async () => {
    await served.close();
    rmSync(input, { recursive: true, force: true });
  });

  it('check names the tier that denied', async () => {
    const answer = await get<{ verdict: { allowed: boolean }; text: string }>(
      '/api/check?from=monitoring/prometheus&to=payments/gateway&port=9090',
    );
    assert.equal(answer.verdict.allowed, false);
    assert.match(
      answer.text,
      /denied by tier security rule gnp\/security\.payments-lockdown ingress\[0\] \(order 10\)/,
    );
  });
  it('the matrix has the connection the tier denies, and the one it passes on', async () => {
    const matrix = await get<{ results: { from: string; to: string; allowed: boolean }[] }>(
      '/api/matrix?port=9090&by=workload',
    );
    const cell = (from: string, to: string) =>
      matrix.results.find((r) => r.from === from && r.to === to)?.allowed;
    assert.equal(cell('monitoring/prometheus', 'payments/gateway'), false);
    assert.equal(cell('monitoring/prometheus', 'shop/api'), true);
  });
});
