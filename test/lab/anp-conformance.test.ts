/**
 * The upstream AdminNetworkPolicy conformance suite in the kernel: the suite's cluster built as a
 * lab (its pods in network namespaces on two nodes, nftables enforcing), every case's steps
 * applied in turn, and every check that can be probed here probed for real over IPv4. Not
 * probed: checks to the host-networked pods (the lab does not build them) and SCTP (no kernel
 * module). Needs root.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadFromObjects } from '../../src/ingest/index.ts';
import type { Lab, ProbePort } from '../../src/lab/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { modelObjects, readSuite, walkSteps, type Check } from '../helpers/policy-conformance.ts';

const DIR = join(import.meta.dirname, '../fixtures/conformance/anp-v1alpha1');
const SKIP =
  needsRoot('the conformance suite in the lab') ||
  (existsSync(DIR) ? false : 'suite not found beside the project');
const TIMEOUT_MS = 400;

describe('AdminNetworkPolicy conformance in the kernel (lab)', { skip: SKIP }, () => {
  const { model, cases } = SKIP ? { model: undefined, cases: [] } : readSuite(DIR);
  let lab: Lab;
  let down: (() => Promise<void>) | undefined;

  before(async () => {
    if (!model) return;
    const labels = <T extends { labels: Record<string, string> }>(
      items: readonly T[],
      key: (t: T) => string,
    ) => new Map(items.map((i) => [key(i), i.labels]));
    const objects = modelObjects(
      model,
      labels(model.namespaces, (n) => n.name),
      labels(model.pods, (p) => `${p.namespace}/${p.name}`),
      [],
      { servedPorts: true },
    );
    ({ lab, down } = await startLab('anp', objects, loadFromObjects(objects).cluster));
    // Every pod listens on every TCP and UDP port a check names.
    const ports = new Map<string, ProbePort>();
    for (const kase of cases)
      for (const step of kase.steps)
        for (const c of step.checks ?? [])
          if (c.protocol !== 'SCTP')
            ports.set(`${c.protocol}/${c.port}`, { port: c.port, protocol: c.protocol });
    await Promise.all(lab.plan.pods.map((pod) => lab.agent(pod.id).listen([...ports.values()])));
  });

  after(async () => {
    await down?.();
  });

  it('every probeable check of every case holds', async (t) => {
    assert.ok(model);
    const built = new Map(lab.plan.pods.map((p) => [p.id, p]));
    const failures: string[] = [];
    let probed = 0;
    for (const kase of cases) {
      for (const { step, policies, namespaceLabels } of walkSteps(model, kase)) {
        const namespaces = model.namespaces.map((n) => ({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: n.name, labels: namespaceLabels.get(n.name) ?? n.labels },
        }));
        lab.apply([...namespaces, ...policies], true);
        const checks = (step.checks ?? []).filter(
          (c) => c.protocol !== 'SCTP' && built.has(c.to) && built.has(c.from),
        );
        // One batch per source pod, all sources at once.
        const bySource = new Map<string, Check[]>();
        for (const c of checks) bySource.set(c.from, [...(bySource.get(c.from) ?? []), c]);
        await Promise.all(
          [...bySource].map(async ([from, list]) => {
            const targets = list.map((c) => ({
              ip: (built.get(c.to)?.ips ?? []).find((ip) => !ip.includes(':')) as string,
              port: c.port,
              protocol: c.protocol as 'TCP' | 'UDP',
            }));
            const outcomes = await lab.agent(from).probe(targets, TIMEOUT_MS);
            list.forEach((c, i) => {
              probed++;
              const observed = outcomes[i]?.connected ?? false;
              if (observed !== (c.expect === 'allow'))
                failures.push(
                  `${kase.file} "${step.subtest}": ${c.from} → ${c.to} ${c.protocol}/${c.port} expected ${c.expect}, kernel ${observed ? 'connected' : 'blocked'} (${outcomes[i]?.detail ?? ''})`,
                );
            });
          }),
        );
      }
      lab.apply([], true);
    }
    t.diagnostic(`${probed} checks probed in the kernel`);
    assert.deepEqual(failures, []);
    assert.ok(probed >= 150, `only ${probed} checks probed`);
  });
});
