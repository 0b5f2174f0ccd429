/**
 * `lab up --control-plane` as root with everything real: etcd, the reflector writing the lab's
 * objects, one `palisade agent` per node inside its namespace enforcing nftables, and packets
 * between the lab's pods. Up → the probed matrix ≡ the reference evaluator; a change applied
 * through etcd reaches the kernels only through the agents (an agent paused with SIGSTOP is
 * reported as lagging and its node keeps the old policy until it resumes); status; down leaves no
 * process, namespace or directory behind.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadCluster } from '../../src/ingest/index.ts';
import { loadControlPlaneLab, probeLab, type ControlPlaneLab, type ProbePort } from '../../src/lab/index.ts';
import { run } from '../../src/dataplane/index.ts';
import { parseCidr, type Cidr } from '../../src/net/ip.ts';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { needsRoot } from '../helpers/kernel.ts';
import type { Raw } from '../helpers/builders.ts';
import { distanceFromFresh } from './helpers.ts';

const skip = needsEtcd || needsRoot('the lab with a control plane');
const ROOT = join(import.meta.dirname, '..', '..');
const SHOP = [
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
].map((p) => join(ROOT, p));
const PORTS: ProbePort[] = [
  { port: 53, protocol: 'UDP' },
  { port: 8080, protocol: 'TCP' },
];
/** Agents start through tsx on a loaded machine: generous. */
const REALIZE_MS = 120_000;

const alive = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};

describe('lab up --control-plane (real etcd, reflector, agents, nftables and packets)', { skip }, () => {
  const stateRoot = mkdtempSync(join(tmpdir(), `palisade-cplab-${process.pid}-`));
  const name = `cp${process.pid % 100000}`;
  let lab: ControlPlaneLab | undefined;
  const paused: number[] = [];

  after(async () => {
    for (const pid of paused) if (alive(pid)) process.kill(pid, 'SIGCONT');
    lab?.close();
    const { ControlPlaneLab } = await loadControlPlaneLab();
    if (existsSync(join(stateRoot, name)))
      await ControlPlaneLab.down(name, { stateRoot }).catch(() => undefined);
    rmSync(stateRoot, { recursive: true, force: true });
  });

  /** Every node's table ≡ a fresh render of the lab's objects: '' or what differs. */
  const tablesDiffer = (opened: ControlPlaneLab): string =>
    opened.plan.nodes
      .map((node) => {
        const cidrs = opened.plan.pods
          .filter((p) => p.node === node.name)
          .flatMap((p) => p.ips.map((ip) => parseCidr(`${ip}/32`)))
          .flatMap((r): Cidr[] => (r.ok ? [r.value] : []));
        return [node.name, distanceFromFresh(node.netns, opened.objects as Raw[], node.name, cidrs)] as const;
      })
      .filter(([, d]) => d !== 0)
      .map(([n, d]) => `${n}: ${d}`)
      .join(', ');

  const assertProbeAgrees = async (opened: ControlPlaneLab): Promise<void> => {
    const report = await probeLab(opened, PORTS, { timeoutMs: 800 });
    assert.deepEqual(
      report.disagreements.map((r) => `${r.from} → ${r.to} ${r.protocol}/${r.port}: kernel ${r.observed}`),
      [],
    );
    const connected = report.results.filter((r) => r.observed).length;
    assert.ok(connected > 0 && connected < report.results.length, 'some connections pass, some are denied');
  };

  it('up: etcd, the reflector and one agent per node enforce the manifests; probe ≡ reference', async () => {
    const { ControlPlaneLab } = await loadControlPlaneLab();
    const loaded = await loadCluster(SHOP);
    lab = await ControlPlaneLab.up(
      name,
      loaded.rawObjects.map((r) => r.value as object),
      loaded.cluster,
      { stateRoot, realizeTimeoutMs: REALIZE_MS },
    );
    const { etcd, agents } = lab.record;
    assert.ok(alive(etcd.pid) && agents.every((a) => alive(a.pid)));
    // Each agent runs inside its node's network namespace.
    const nodes = lab.plan.nodes;
    for (const agent of agents) {
      const netns = nodes.find((n) => n.name === agent.node)?.netns;
      const own = (await run('ip', ['netns', 'identify', String(agent.pid)])).stdout.trim();
      assert.equal(own, netns, `the agent of ${agent.node} runs in its node's namespace`);
    }
    // The keys are the reflector's: the pod's reduced value under the v1 layout.
    const store = await (await import('../../src/etcd/index.ts')).connectEtcd({ endpoints: [etcd.endpoint] });
    try {
      const db = await store.get('/palisade/v1/k8s/pod/shop/db-0');
      assert.match(db?.value ?? '', /"nodeName":"node-2"/);
    } finally {
      store.close();
    }
    assert.equal(tablesDiffer(lab), '');
    await assertProbeAgrees(lab);
  });

  it('apply goes through etcd: a paused agent lags and keeps the old policy, then converges', async () => {
    assert.ok(lab);
    const before = (await lab.status()).status.policyRevision;
    // node-1 runs coredns, which the change restricts.
    const agent1 = lab.record.agents.find((a) => a.node === 'node-1')!;
    process.kill(agent1.pid, 'SIGSTOP');
    paused.push(agent1.pid);
    const change = parseAllDocuments(
      readFileSync(join(ROOT, 'examples/lab/dns-from-shop-only.yaml'), 'utf8'),
    ).map((d) => d.toJS() as object);
    const report = await lab.apply(change);
    assert.equal(report.keysWritten, 1);
    assert.ok(report.revision > before, `policy revision ${report.revision} > ${before}`);
    const lagging = await lab.waitRealized(1500);
    assert.deepEqual(
      lagging.lagging.map((l) => l.node),
      ['node-1'],
    );
    // The lab wrote nothing to node-1's kernel: monitoring → coredns UDP/53 still connects there.
    const coredns = lab.plan.pods.find((p) => p.id.startsWith('kube-system/coredns'))!;
    const [stillOpen] = await lab
      .agent('monitoring/prometheus-0')
      .probe([{ ip: coredns.ips[0]!, port: 53, protocol: 'UDP' }], 800);
    assert.equal(stillOpen?.connected, true, 'the old policy stays until the agent realizes the new one');
    process.kill(agent1.pid, 'SIGCONT');
    const reading = await lab.waitRealized(REALIZE_MS);
    assert.deepEqual(reading.lagging, []);
    assert.equal(tablesDiffer(lab), '');
    await assertProbeAgrees(lab);
    const [closed] = await lab
      .agent('monitoring/prometheus-0')
      .probe([{ ip: coredns.ips[0]!, port: 53, protocol: 'UDP' }], 800);
    assert.equal(closed?.connected, false);
  });

  it('status: every agent alive, ready, nftables, at the store revision', async () => {
    assert.ok(lab);
    const { status, lagging } = await lab.status();
    assert.deepEqual(lagging, []);
    assert.deepEqual(
      status.nodes.map((n) => [n.node, n.state, n.record?.phase, n.record?.datapath, n.lag]),
      [
        ['node-1', 'alive', 'ready', 'nftables', 0],
        ['node-2', 'alive', 'ready', 'nftables', 0],
      ],
    );
  });

  it('down stops every process it started, removes the namespaces and the data dir', async () => {
    assert.ok(lab);
    const { ControlPlaneLab } = await loadControlPlaneLab();
    const pids = [lab.record.etcd.pid, ...lab.record.agents.map((a) => a.pid)];
    const namespaces = [...lab.plan.nodes.map((n) => n.netns), ...lab.plan.pods.map((p) => p.netns)];
    const dataDir = lab.record.etcd.dataDir;
    lab.close();
    lab = undefined;
    const removed = await ControlPlaneLab.down(name, { stateRoot });
    assert.equal(removed.processes, 3 + 7);
    assert.deepEqual(
      pids.filter((pid) => alive(pid)),
      [],
    );
    const left = (await run('ip', ['netns', 'list'])).stdout;
    assert.deepEqual(
      namespaces.filter((ns) => left.includes(ns)),
      [],
    );
    assert.equal(existsSync(dataDir), false);
    assert.equal(existsSync(join(stateRoot, name)), false);
  });
});
