/**
 * The lab's suite against the kernel, for either datapath: real TCP and UDP between pods in
 * network namespaces on two nodes, compared with the reference evaluator — no policy, every
 * Kubernetes documentation example, random policies and tiered cluster policy (property,
 * bounded), replies, established flows across unrelated updates, a new deny cutting a flow
 * within 1 s, 100 updates under a concurrent prober with no transient allow, cross-node, the
 * command line, fail closed; the AdminNetworkPolicy conformance suite; dual-stack. nftables runs
 * it from test/lab/, eBPF from test/ebpf/: same cases, same expected verdicts. Needs root (and,
 * for eBPF, clang and bpftool).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { loadCluster, loadFromObjects } from '../../src/ingest/index.ts';
import { run } from '../../src/dataplane/index.ts';
import { layout, PinnedMaps } from '../../src/datapaths/ebpf/kernel/index.ts';
import { evaluate, indexCluster } from '../../src/semantics/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import {
  probeLab,
  type DatapathKind,
  type Lab,
  type ProbePort,
  type ProbeResult,
} from '../../src/lab/index.ts';
import { clusterPoliciesArb, policiesArb } from './arbitraries.ts';
import { calicoArb, ciliumArb } from './engine-arbitraries.ts';
import { cli } from './cli.ts';
import { policy } from './builders.ts';
import { startLab } from './kernel.ts';
import { modelObjects, readSuite, walkSteps, type Check } from './policy-conformance.ts';

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
/** What each datapath's apply report counts. */
const OPERATIONS: Record<DatapathKind, string> = { nftables: 'nft operations', ebpf: 'map operations' };

function describeDisagreements(results: readonly ProbeResult[]): string {
  return results
    .map((r) => `${r.from} → ${r.to} ${r.protocol}/${r.port}: kernel ${r.observed}, evaluator ${r.expected}`)
    .join('\n');
}

/**
 * Removes a pod's address from its node's datapath behind the renderer's back: nftables' dispatch
 * set elements, or eBPF's address records on both sides.
 */
async function forgetPod(datapath: DatapathKind, netns: string, ip: string): Promise<void> {
  if (datapath === 'nftables') {
    for (const map of ['in_4', 'eg_4', 'rin_4', 'reg_4']) {
      const result = await run('nft', ['delete', 'element', 'inet', 'palisade', map, `{ ${ip} }`], { netns });
      assert.equal(result.code, 0, result.stderr);
    }
    return;
  }
  const maps = PinnedMaps.open({ instance: `netns-${netns}` });
  try {
    const octets = Buffer.from(ip.split('.').map(Number));
    const keys = maps.entries('records').filter(([key]) => {
      const { address } = layout.decodeAddressKey(key);
      return address.family === 4 && Buffer.from(address.bytes.subarray(0, 4)).equals(octets);
    });
    assert.ok(keys.length > 0, `${ip} has records`);
    for (const [key] of keys) maps.remove('records', key);
  } finally {
    maps.close();
  }
}

/** The lab's suite on a datapath (skipped, with the reason, when `skip` is a string). */
export function labSuite(datapath: DatapathKind, skip: string | false): void {
  void describe(`the lab (${datapath})`, { skip }, () => {
    let lab: Lab;
    let stateRoot: string;
    let down: (() => Promise<void>) | undefined;

    before(async () => {
      const loaded = await loadCluster([fixture('cluster.yaml')]);
      ({ lab, stateRoot, down } = await startLab(
        datapath === 'ebpf' ? 'et' : 't',
        loaded.rawObjects.map((r) => r.value as object),
        loaded.cluster,
        { datapath },
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

    void it('builds 9 pods on 2 nodes, and without policy every pod reaches every other', async () => {
      assert.equal(lab.plan.pods.length, 9);
      assert.equal(lab.plan.nodes.length, 2);
      const results = await probe();
      assert.equal(results.length, 9 * 8 * PORTS.length);
      assert.ok(results.every((r) => r.observed));
    });

    void it("enforces each of the Kubernetes documentation's examples exactly as the evaluator says", async () => {
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

    void it('matches the evaluator for random policies (TCP and UDP, two ports)', async () => {
      await fc.assert(
        fc.asyncProperty(policiesArb(4), async (policies) => {
          lab.apply(policies, true);
          await probe();
        }),
        { numRuns: Math.max(3, Math.ceil(RUNS / 25)), seed: 20261122 },
      );
    });

    void it('matches the evaluator for random tiered cluster policies over random NetworkPolicies', async () => {
      await fc.assert(
        fc.asyncProperty(policiesArb(2), clusterPoliciesArb(3), async (policies, clusterPolicies) => {
          lab.apply([...policies, ...clusterPolicies], true);
          await probe();
        }),
        { numRuns: Math.max(4, Math.ceil(RUNS / 20)), seed: 20261123 },
      );
      lab.apply([], true);
    });

    void it(
      "matches the evaluator for random Calico tiers and policies and Cilium's over random NetworkPolicies",
      { skip: datapath === 'ebpf' ? "the eBPF datapath refuses Calico's and Cilium's policies" : false },
      async () => {
        await fc.assert(
          fc.asyncProperty(policiesArb(2), calicoArb(3), ciliumArb(2), async (policies, calico, cilium) => {
            lab.apply([...policies, ...calico, ...cilium], true);
            await probe();
          }),
          { numRuns: Math.max(4, Math.ceil(RUNS / 20)), seed: 20261124 },
        );
        lab.apply([], true);
      },
    );

    void it('passes replies where the reverse direction is denied', async () => {
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

    void it('keeps established connections across an unrelated update, and cuts one a new policy denies within 1 s', async () => {
      lab.apply([], true);
      const client = lab.agent('a/web');
      const target = lab.plan.pods.find((p) => p.id === 'c/db');
      assert.ok(target);
      const stream = await client.open({ ip: target.ips[0] as string, port: 80, protocol: 'TCP' }, 2000);
      assert.ok(stream !== undefined);
      assert.equal((await client.ping(stream, 1000)).connected, true);

      const unrelated = lab.apply(
        [
          policy('b', 'unrelated', {
            podSelector: { matchLabels: { app: 'api' } },
            policyTypes: ['Ingress'],
          }),
        ],
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
      assert.ok(
        performance.now() - started < 1000,
        `cut within 1 s (took ${performance.now() - started} ms)`,
      );
      await client.closeStream(stream);
    });

    void it('never lets a prober through where neither the old nor the new policy allows, over 100 updates', async () => {
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
          `${o.from} → ${o.to} ${o.port.protocol}/${o.port.port} connected, but no live version allows it ` +
            `(probed ${o.startedAt}–${o.endedAt}; live versions ${live.map((k) => `${k} [${windows[k]?.start}–${windows[k]?.end}]`).join(', ')}; ` +
            `next ${live.length > 0 ? JSON.stringify(windows[(live.at(-1) ?? 0) + 1]) : '-'}; verdicts ${[
              -2, -1, 0, 1, 2,
            ]
              .map((d) => (live[0] ?? 0) + d)
              .filter((k) => k >= 0 && k < clusters.length)
              .map((k) => {
                const c = clusters[k] as Cluster;
                const src = endpoint(c, o.from);
                const dst = endpoint(c, o.to);
                return `${k}:${src && dst ? evaluate(indexes[k] as ReturnType<typeof indexCluster>, { src: { kind: 'endpoint', endpoint: src }, dst: { kind: 'endpoint', endpoint: dst }, protocol: o.port.protocol, port: o.port.port, family: 4 }).allowed : '-'}`;
              })
              .join(' ')})`,
        );
        checked++;
      }
      assert.ok(checked > 0);
    });

    void it('is driven from the command line too: a second up is refused, apply re-attaches and skips a broken policy', async () => {
      const common = ['--name', lab.plan.name, '--state-dir', stateRoot];
      const again = await cli(['lab', 'up', ...common, '-f', fixture('cluster.yaml')]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /is already up/);
      const applied = await cli(['lab', 'apply', ...common, '-f', fixture('apply-mixed.yaml')]);
      assert.equal(applied.code, 1, 'the broken policy is an input error');
      assert.match(applied.stderr, /apply-mixed\.yaml:13:\d+/);
      assert.match(applied.stdout, new RegExp(`^1 change applied; ${OPERATIONS[datapath]} per node: `, 'm'));
      const probed = await cli(['lab', 'probe', ...common, '--port', '80', '--timeout', '400']);
      assert.match(probed.stdout, / 0 disagreements with the reference evaluator\n$/);
      assert.equal(probed.code, 0);
    });

    // Last: it edits the kernel's table (or maps) behind the renderer's back.
    void it('isolates a local pod that has no dispatch entry (fail closed), in both directions', async () => {
      const pod = lab.plan.pods.find((p) => p.id === 'b/api');
      const node = lab.plan.nodes.find((n) => n.name === pod?.node);
      assert.ok(pod && node);
      const ip = pod.ips[0] as string;
      const baseline = await probeLab(lab, PORTS.slice(0, 1), { timeoutMs: TIMEOUT_MS });
      assert.ok(baseline.results.some((r) => (r.from === pod.id || r.to === pod.id) && r.observed));
      await forgetPod(datapath, node.netns, ip);
      const report = await probeLab(lab, PORTS.slice(0, 1), { timeoutMs: TIMEOUT_MS });
      for (const r of report.results) {
        const was = baseline.results.find((b) => b.from === r.from && b.to === r.to);
        const touches: boolean = r.from === pod.id || r.to === pod.id;
        assert.equal(r.observed, touches ? false : was?.observed, `${r.from} → ${r.to}`);
      }
    });
  });
}

const ANP_SUITE = join(import.meta.dirname, '../fixtures/conformance/anp-v1alpha1');
const ANP_TIMEOUT_MS = 400;

/**
 * The upstream AdminNetworkPolicy conformance suite in the lab: its cluster built on two nodes,
 * every case's steps applied in turn, every check that can be probed here probed for real over
 * IPv4. Not probed: checks to the host-networked pods (the lab does not build them) and SCTP (no
 * kernel module).
 */
export function labConformanceSuite(datapath: DatapathKind, skip: string | false): void {
  const SKIP = skip || (existsSync(ANP_SUITE) ? false : 'suite not found beside the project');
  void describe(`AdminNetworkPolicy conformance in the kernel (lab, ${datapath})`, { skip: SKIP }, () => {
    const { model, cases } = SKIP ? { model: undefined, cases: [] } : readSuite(ANP_SUITE);
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
      ({ lab, down } = await startLab(
        datapath === 'ebpf' ? 'eanp' : 'anp',
        objects,
        loadFromObjects(objects).cluster,
        {
          datapath,
        },
      ));
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

    void it('every probeable check of every case holds', async (t) => {
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
              const outcomes = await lab.agent(from).probe(targets, ANP_TIMEOUT_MS);
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
}

/** Dual-stack pods: IPv6 routed and enforced like IPv4, each family probed on its own. */
export function labDualStackSuite(datapath: DatapathKind, skip: string | false): void {
  void describe(`the lab, dual-stack (${datapath})`, { skip }, () => {
    let lab: Lab;
    let down: (() => Promise<void>) | undefined;

    before(async () => {
      const loaded = await loadCluster([fixture('dual-stack.yaml')]);
      ({ lab, down } = await startLab(
        datapath === 'ebpf' ? 'ed' : 'd',
        loaded.rawObjects.map((r) => r.value as object),
        loaded.cluster,
        { datapath },
      ));
    });

    after(async () => {
      await down?.();
    });

    void it('probes IPv4 and IPv6 separately and agrees with the evaluator on both', async () => {
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
}
