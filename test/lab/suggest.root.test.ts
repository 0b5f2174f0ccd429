/**
 * `suggest` against the kernel (issue 39's "done when"): in the lab (nftables, real network
 * namespaces), traffic is observed under random policies — every pod pair on TCP and UDP 80 and
 * 53 probed, each answer a flow record, allowed or denied — then the policies suggested from
 * those flows replace them, and probing every pair and port again lets exactly the connections
 * seen allowed through, no more and no fewer (and the kernel agrees with the evaluator). Needs root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { loadCluster } from '../../src/ingest/index.ts';
import { probeLab, type Lab, type ProbePort, type ProbeResult } from '../../src/lab/index.ts';
import type { FlowRecord } from '../../src/flows/index.ts';
import { policiesArb } from '../helpers/arbitraries.ts';
import { cli } from '../helpers/cli.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

const PORTS: ProbePort[] = [
  { port: 80, protocol: 'TCP' },
  { port: 80, protocol: 'UDP' },
  { port: 53, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
];
const TIMEOUT_MS = 800;
const CLUSTER = join(import.meta.dirname, '..', 'fixtures', 'lab', 'cluster.yaml');

const key = (r: ProbeResult): string => `${r.from} → ${r.to} ${r.protocol}/${r.port}`;

void describe(
  'suggest in the lab (nftables)',
  { skip: needsRoot('the lab (network namespaces and nftables)') },
  () => {
    let lab: Lab;
    let down: (() => Promise<void>) | undefined;

    before(async () => {
      const loaded = await loadCluster([CLUSTER]);
      ({ lab, down } = await startLab(
        'sg',
        loaded.rawObjects.map((r) => r.value as object),
        loaded.cluster,
      ));
    });

    after(async () => {
      await down?.();
    });

    const probe = async (): Promise<readonly ProbeResult[]> => {
      const report = await probeLab(lab, PORTS, { timeoutMs: TIMEOUT_MS });
      assert.deepEqual(report.disagreements.map(key), [], 'the kernel disagrees with the evaluator');
      return report.results;
    };

    /** Each probe as the flow record an agent would report for it (no labels: the cluster gives them). */
    const flowsOf = (results: readonly ProbeResult[]): string => {
      const ipOf = new Map(lab.plan.pods.map((p) => [p.id, p.ips[0] as string]));
      return results
        .map((r): FlowRecord => ({
          src: { ip: ipOf.get(r.from) as string, pod: r.from },
          dst: { ip: r.ip, pod: r.to },
          protocol: r.protocol,
          port: r.port,
          verdict: r.observed ? 'allowed' : 'denied',
          decidedBy: [],
          count: 1,
          firstSeen: '2026-11-29T07:00:00Z',
          lastSeen: '2026-11-29T07:00:00Z',
        }))
        .map((f) => JSON.stringify(f))
        .join('\n');
    };

    void it('lets exactly the observed connections through, on every pod pair and port', async (t) => {
      const dir = await tempDir(t, 'palisade-suggest-lab-');
      let run = 0;
      await fc.assert(
        fc.asyncProperty(policiesArb(4), async (policies) => {
          lab.apply(policies, true);
          const before = await probe();
          const seen = new Set(before.filter((r) => r.observed).map(key));
          const file = join(dir, `flows-${run++}.ndjson`);
          await writeFile(file, flowsOf(before));
          const suggested = await cli(['suggest', '-f', CLUSTER, '--flows', file]);
          // The fixture's `team: y` is YAML 1.1's true: that namespace's labels are an error (exit 1), and it
          // is known by its name alone — which is all a suggestion selects namespaces by.
          assert.equal(suggested.code, 1, suggested.stderr);
          assert.deepEqual(
            suggested.stderr
              .split('\n')
              .filter((l) => / error /.test(l))
              .map((l) => /error (\w+)/.exec(l)?.[1]),
            ['SCHEMA_TYPE'],
          );
          assert.match(suggested.stdout, /^# Verified with the reference evaluator/m);
          const objects = parseAllDocuments(suggested.stdout).map((d) => d.toJS() as object);
          lab.apply(objects, true);
          const afterwards = await probe();
          assert.equal(afterwards.length, before.length);
          const wrong = afterwards
            .filter((r) => r.observed !== seen.has(key(r)))
            .map((r) => `${key(r)}: ${r.observed ? 'passes' : 'blocked'}`);
          assert.deepEqual(wrong, []);
        }),
        { numRuns: Math.max(4, propertyRuns(100, 0.04)), seed: 20261129 },
      );
      lab.apply([], true);
    });
  },
);
