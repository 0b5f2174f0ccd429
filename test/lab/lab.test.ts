/**
 * The lab against the kernel: real TCP and UDP between pods in network namespaces on two nodes,
 * enforced by the nftables renderer, compared with the reference evaluator. Needs root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { loadCluster } from '../../src/ingest/index.ts';
import { run } from '../../src/dataplane/index.ts';
import { evaluate, indexCluster } from '../../src/semantics/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import { probeLab, type Lab, type ProbePort, type ProbeResult } from '../../src/lab/index.ts';
import { clusterPoliciesArb, policiesArb } from '../helpers/arbitraries.ts';
import { cli } from '../helpers/cli.ts';
import { policy } from '../helpers/builders.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';

const SKIP = needsRoot('the lab (network namespaces and nftables)');
const PORTS: ProbePort[] = [
  { port: 80, protocol: 'TCP' },
  { port: 80, protocol: 'UDP' },
  { port: 53, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
];
// Generous: a blocked probe waits this long, and a loaded CI machine answers slowly.
const TIMEOUT_MS = 800;
const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const fixture = (name: string): string => join(import.meta.dirname, '..', 'fixtures', 'lab', name);

function describeDisagreements(results: readonly ProbeResult[]): string {
  return results
    .map((r) => `${r.from} → ${r.to} ${r.protocol}/${r.port}: kernel ${r.observed}, evaluator ${r.expected}`)
    .join('\n');
}

describe('the lab', { skip: SKIP }, () => {
  let lab: Lab;
  let stateRoot: string;
  let down: (() => Promise<void>) | undefined;

  before(async () => {
    const loaded = await loadCluster([fixture('cluster.yaml')]);
    ({ lab, stateRoot, down } = await startLab(
      't',
      loaded.rawObjects.map((r) => r.value as object),
      loaded.cluster,
    ));
  });

  after(async () => {
    await down?.();
  });

  const probe = async (): Promise<ProbeResult[]> => {
    const report = await probeLab(lab, PORTS, { timeoutMs: TIMEOUT_MS });
    assert.deepEqual(report.disagreements, [], describeDisagreements(report.disagreements));
    return [...report.results];
  };

  it('builds 9 pods on 2 nodes, and without policy every pod reaches every other', async () => {
    assert.equal(lab.plan.pods.length, 9);
    assert.equal(lab.plan.nodes.length, 2);
    const results = await probe();
    assert.equal(results.length, 9 * 8 * PORTS.length);
    assert.ok(results.every((r) => r.observed));
  });

  it("enforces each of the Kubernetes documentation's examples exactly as the evaluator says", async () => {
    const documents = parseAllDocuments(readFileSync(fixture('docs-examples.yaml'), 'utf8')).map(
      (d) => d.toJS() as { metadata: { name: string } },
    );
    const nodeOf = new Map(lab.plan.pods.map((p) => [p.id, p.node]));
    let crossNodeBlocked = 0;
    let crossNodeConnected = 0;
    for (const example of documents) {
      lab.apply([example], true);
      assert.deepEqual(lab.policyKeys().length, 1, example.metadata.name);
      for (const r of await probe()) {
        if (nodeOf.get(r.from) === nodeOf.get(r.to)) continue;
        if (r.observed) crossNodeConnected++;
        else crossNodeBlocked++;
      }
    }
    // Cross-node traffic is enforced, not just passed: both outcomes occur between nodes.
    assert.ok(crossNodeBlocked > 0 && crossNodeConnected > 0);
  });

  it('matches the evaluator for random policies (TCP and UDP, two ports)', async () => {
    await fc.assert(
      fc.asyncProperty(policiesArb(4), async (policies) => {
        lab.apply(policies, true);
        await probe();
      }),
      { numRuns: Math.max(3, Math.ceil(RUNS / 25)), seed: 20261122 },
    );
  });

  it('matches the evaluator for random tiered cluster policies over random NetworkPolicies', async () => {
    await fc.assert(
      fc.asyncProperty(policiesArb(2), clusterPoliciesArb(3), async (policies, clusterPolicies) => {
        lab.apply([...policies, ...clusterPolicies], true);
        await probe();
      }),
      { numRuns: Math.max(4, Math.ceil(RUNS / 20)), seed: 20261123 },
    );
    lab.apply([], true);
  });

  it('passes replies where the reverse direction is denied', async () => {
    lab.apply(
      [
        policy('a', 'web-isolated', {
          podSelector: { matchLabels: { app: 'web' } },
          policyTypes: ['Ingress'],
        }),
        policy('b', 'db-from-a-web', {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [
            {
              from: [
                {
                  namespaceSelector: { matchLabels: { team: 'x', env: 'p' } },
                  podSelector: { matchLabels: { app: 'web' } },
                },
              ],
            },
          ],
        }),
      ],
      true,
    );
    const results = await probe();
    const tcp80 = (from: string, to: string) =>
      results.find((r) => r.from === from && r.to === to && r.port === 80 && r.protocol === 'TCP');
    // a/web → b/db connects (its echo is the reply), b/db → a/web does not.
    assert.equal(tcp80('a/web', 'b/db')?.observed, true);
    assert.equal(tcp80('b/db', 'a/web')?.observed, false);
  });

  it('keeps established connections across an unrelated update, and cuts one a new policy denies within 1 s', async () => {
    lab.apply([], true);
    const client = lab.agent('a/web');
    const target = lab.plan.pods.find((p) => p.id === 'c/db');
    assert.ok(target);
    const stream = await client.open({ ip: target.ips[0] as string, port: 80, protocol: 'TCP' }, 2000);
    assert.ok(stream !== undefined);
    assert.equal((await client.ping(stream, 1000)).connected, true);

    const unrelated = lab.apply(
      [policy('b', 'unrelated', { podSelector: { matchLabels: { app: 'api' } }, policyTypes: ['Ingress'] })],
      true,
    );
    assert.ok([...unrelated.operations.values()].some((n) => n !== 0));
    assert.equal((await client.ping(stream, 1000)).connected, true, 'established flow survives');

    const started = performance.now();
    const cut = lab.apply(
      [policy('c', 'deny-db', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] })],
      true,
    );
    assert.ok([...cut.operations.values()].some((n) => n !== 0));
    const after = await client.ping(stream, 500);
    assert.equal(after.connected, false, 'no packet passes after the deny');
    assert.ok(performance.now() - started < 1000, `cut within 1 s (took ${performance.now() - started} ms)`);
    await client.closeStream(stream);
  });

  it('never lets a prober through where neither the old nor the new policy allows, over 100 updates', async () => {
    const versions = fc.sample(policiesArb(3), { numRuns: 100, seed: 7 });
    const clusters: Cluster[] = [lab.current];
    const windows: { start: number; end: number }[] = [{ start: 0, end: 0 }];
    let updating = true;
    const observed: {
      from: string;
      to: string;
      ip: string;
      port: ProbePort;
      startedAt: number;
      endedAt: number;
    }[] = [];
    const pods = lab.plan.pods;
    const prober = (async () => {
      while (updating) {
        await Promise.all(
          pods.map(async (from) => {
            const targets = pods
              .filter((p) => p.id !== from.id)
              .flatMap((to) => PORTS.slice(0, 2).map((port) => ({ to, port })));
            const outcomes = await lab.agent(from.id).probe(
              targets.map((t) => ({ ip: t.to.ips[0] as string, ...t.port })),
              150,
            );
            outcomes.forEach((o, i) => {
              const t = targets[i];
              if (o.connected && t)
                observed.push({
                  from: from.id,
                  to: t.to.id,
                  ip: t.to.ips[0] as string,
                  port: t.port,
                  startedAt: o.startedAt,
                  endedAt: o.endedAt,
                });
            });
          }),
        );
      }
    })();
    for (const policies of versions) {
      const start = Date.now();
      lab.apply(policies, true);
      windows.push({ start, end: Date.now() });
      clusters.push(lab.current);
      // Updates are synchronous: let the prober's answers in between them.
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    updating = false;
    await prober;
    assert.ok(observed.length > 100, `the prober ran (${observed.length} connections seen)`);
    const indexes = clusters.map(indexCluster);
    const endpoint = (cluster: Cluster, id: string) => cluster.endpoints.find((e) => e.id === id);
    let checked = 0;
    for (const o of observed) {
      // Version k is in force from the start of its update to the end of the next one.
      const live = indexes
        .map((_, k) => k)
        .filter((k) => {
          const from = windows[k]?.start ?? 0;
          const until = windows[k + 1]?.end ?? Infinity;
          return from <= o.endedAt && until >= o.startedAt;
        });
      const allowedBySome = live.some((k) => {
        const cluster = clusters[k] as Cluster;
        const src = endpoint(cluster, o.from);
        const dst = endpoint(cluster, o.to);
        if (!src || !dst) return false;
        return evaluate(indexes[k] as ReturnType<typeof indexCluster>, {
          src: { kind: 'endpoint', endpoint: src },
          dst: { kind: 'endpoint', endpoint: dst },
          protocol: o.port.protocol,
          port: o.port.port,
          family: 4,
        }).allowed;
      });
      assert.ok(
        allowedBySome,
        `${o.from} → ${o.to} ${o.port.protocol}/${o.port.port} connected, but no live version allows it`,
      );
      checked++;
    }
    assert.ok(checked > 0);
  });

  it('is driven from the command line too: a second up is refused, apply re-attaches and skips a broken policy', async () => {
    const common = ['--name', lab.plan.name, '--state-dir', stateRoot];
    const again = await cli(['lab', 'up', ...common, '-f', fixture('cluster.yaml')]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /is already up/);
    const applied = await cli(['lab', 'apply', ...common, '-f', fixture('apply-mixed.yaml')]);
    assert.equal(applied.code, 1, 'the broken policy is an input error');
    assert.match(applied.stderr, /apply-mixed\.yaml:13:\d+/);
    assert.match(applied.stdout, /^1 changes applied; nft operations per node: /m);
    const probed = await cli(['lab', 'probe', ...common, '--port', '80', '--timeout', '400']);
    assert.match(probed.stdout, / 0 disagreements with the reference evaluator\n$/);
    assert.equal(probed.code, 0);
  });
  // Last: it edits the kernel's table behind the renderer's back.
  it('isolates a local pod that has no dispatch entry (fail closed), in both directions', async () => {
    const pod = lab.plan.pods.find((p) => p.id === 'b/api');
    const node = lab.plan.nodes.find((n) => n.name === pod?.node);
    assert.ok(pod && node);
    const ip = pod.ips[0] as string;
    const baseline = await probeLab(lab, PORTS.slice(0, 1), { timeoutMs: TIMEOUT_MS });
    assert.ok(baseline.results.some((r) => (r.from === pod.id || r.to === pod.id) && r.observed));
    for (const map of ['in_4', 'eg_4', 'rin_4', 'reg_4']) {
      const result = await run('nft', ['delete', 'element', 'inet', 'palisade', map, `{ ${ip} }`], {
        netns: node.netns,
      });
      assert.equal(result.code, 0, result.stderr);
    }
    const report = await probeLab(lab, PORTS.slice(0, 1), { timeoutMs: TIMEOUT_MS });
    for (const r of report.results) {
      const was = baseline.results.find((b) => b.from === r.from && b.to === r.to);
      const touches: boolean = r.from === pod.id || r.to === pod.id;
      assert.equal(r.observed, touches ? false : was?.observed, `${r.from} → ${r.to}`);
    }
  });
});
