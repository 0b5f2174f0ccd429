/**
 * The lab with dual-stack pods: IPv6 is routed between namespaces and nodes and enforced by the
 * same table (family inet), and each family is probed on its own. Needs root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { join } from 'node:path';
import { loadCluster } from '../../src/ingest/index.ts';
import { probeLab, type Lab } from '../../src/lab/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';

describe('the lab, dual-stack', { skip: needsRoot('the lab (network namespaces and nftables)') }, () => {
  let lab: Lab;
  let down: (() => Promise<void>) | undefined;

  before(async () => {
    const loaded = await loadCluster([join(import.meta.dirname, '..', 'fixtures', 'lab', 'dual-stack.yaml')]);
    ({ lab, down } = await startLab(
      'd',
      loaded.rawObjects.map((r) => r.value as object),
      loaded.cluster,
    ));
  });

  after(async () => {
    await down?.();
  });

  it('probes IPv4 and IPv6 separately and agrees with the evaluator on both', async () => {
    const report = await probeLab(
      lab,
      [
        { port: 80, protocol: 'TCP' },
        { port: 80, protocol: 'UDP' },
      ],
      { timeoutMs: 400 },
    );
    assert.deepEqual(report.disagreements, []);
    const toDb = (from: string, v6: boolean) =>
      report.results.find(
        (r) => r.from === from && r.to === 'ds/db' && r.protocol === 'TCP' && r.ip.includes(':') === v6,
      );
    // web reaches db over IPv6 only (the ipBlock is its IPv6 address); api over both.
    assert.equal(toDb('ds/web', true)?.observed, true);
    assert.equal(toDb('ds/web', false)?.observed, false);
    assert.equal(toDb('ds/api', true)?.observed, true);
    assert.equal(toDb('ds/api', false)?.observed, true);
  });
});
