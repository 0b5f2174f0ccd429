/**
 * The lab with dual-stack pods: IPv6 is routed between namespaces and nodes and enforced by the
 * same table (family inet), and each family is probed on its own. Needs root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCluster } from '../../src/ingest/index.ts';
import { isRoot } from '../../src/dataplane/index.ts';
import { Lab, probeLab } from '../../src/lab/index.ts';

const SKIP = isRoot() ? false : 'skipped: the lab needs root (network namespaces and nftables)';

describe('the lab, dual-stack', { skip: SKIP }, () => {
  let lab: Lab;
  let stateRoot: string;

  before(async () => {
    stateRoot = mkdtempSync(join(tmpdir(), 'palisade-lab6-'));
    const loaded = await loadCluster([join(import.meta.dirname, '..', 'fixtures', 'lab', 'dual-stack.yaml')]);
    lab = await Lab.up(
      `d${process.pid % 100000}`,
      loaded.rawObjects.map((r) => r.value as object),
      loaded.cluster,
      { stateRoot },
    );
  });

  after(async () => {
    if (lab) {
      lab.close();
      await Lab.down(lab.plan.name, { stateRoot });
    }
    rmSync(stateRoot, { recursive: true, force: true });
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
