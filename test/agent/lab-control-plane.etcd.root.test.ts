/**
 * `lab up --control-plane` as root with everything real: etcd, the reflector writing the lab's
 * objects, one `palisade agent` per node inside its namespace enforcing nftables, and packets
 * between the lab's pods. Up → the probed matrix ≡ the reference evaluator; etcd wants a client
 * certificate and enforces the roles (an agent's identity cannot write policy, a client without a
 * certificate is refused); a change applied through etcd reaches the kernels only through the
 * agents (an agent paused with SIGSTOP is reported as lagging — after a new key, a change to an
 * older key and a deletion — and its node keeps the old policy until it resumes); `lab apply`
 * while etcd is paused, killed, or led by another reflector fails in one line within its
 * deadline and records nothing; etcd restarts over the socket SIGKILL left; status; down leaves
 * no process, namespace or directory behind.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { agentUser, READER_USER, REFLECTOR_USER } from '../../src/agent/index.ts';
import { campaign, connectEtcd } from '../../src/etcd/index.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import { labEtcdConnection } from '../../src/lab/control-plane-etcd.ts';
import { loadControlPlaneLab, probeLab, type ControlPlaneLab } from '../../src/lab/index.ts';
import { run } from '../../src/dataplane/index.ts';
import { parseCidr, type Cidr } from '../../src/net/ip.ts';
import { needsEtcd, needsOpenssl } from '../live/etcd-fixture.ts';
import { needsRoot } from '../helpers/kernel.ts';
import type { Raw } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';
import { distanceFromFresh } from './helpers.ts';
import { alive, PORTS, REALIZE_MS, ROOT, SHOP } from './lab-control-plane-shared.ts';

const skip = needsEtcd || needsOpenssl || needsRoot('the lab with a control plane');

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
    const store = await connectEtcd(labEtcdConnection(etcd, READER_USER));
    try {
      const db = await store.get('/palisade/v1/k8s/pod/shop/db-0');
      assert.match(db?.value ?? '', /"nodeName":"node-2"/);
    } finally {
      store.close();
    }
    assert.equal(tablesDiffer(lab), '');
    await assertProbeAgrees(lab);
  });

  it("etcd is authenticated: no certificate, no handshake; an agent's identity cannot write policy", async () => {
    assert.ok(lab);
    const { etcd } = lab.record;
    assert.match(etcd.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
    const policyKey = '/palisade/v1/k8s/networkpolicy/shop/db';
    const before = await lab.status();
    const anonymous = labEtcdConnection(etcd, READER_USER);
    for (const connection of [
      { endpoints: anonymous.endpoints, caFile: anonymous.caFile! },
      { endpoints: [`unixs://${etcd.socket}`], caFile: anonymous.caFile! },
      { endpoints: [etcd.endpoint.replace('https:', 'http:')] },
    ]) {
      const store = await connectEtcd(connection);
      try {
        await assert.rejects(store.txn([], [{ type: 'delete', key: policyKey }]), /UNAVAILABLE/);
      } finally {
        store.close();
      }
    }
    const agent = await connectEtcd(labEtcdConnection(etcd, agentUser('node-1'), 'socket'));
    try {
      const allowAll = JSON.stringify({
        apiVersion: 'policy.networking.k8s.io/v1alpha1',
        kind: 'AdminNetworkPolicy',
        metadata: { name: 'allow-all' },
        spec: {
          priority: 0,
          subject: { namespaces: {} },
          ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }],
        },
      });
      await assert.rejects(
        agent.txn(
          [],
          [{ type: 'put', key: '/palisade/v1/k8s/adminnetworkpolicy/allow-all', value: allowAll }],
        ),
        /permission denied/,
      );
      await assert.rejects(agent.txn([], [{ type: 'delete', key: policyKey }]), /permission denied/);
      await assert.rejects(
        agent.txn([], [{ type: 'put', key: '/palisade/v1/status/nodes/node-2', value: '{}' }]),
        /permission denied/,
      );
    } finally {
      agent.close();
    }
    // Nothing changed: the same policy revision, and the probes unchanged.
    assert.equal((await lab.status()).status.policyRevision, before.status.policyRevision);
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

  it('a paused agent lags behind a change to an older key and behind a deletion', async () => {
    assert.ok(lab);
    const agent1 = lab.record.agents.find((a) => a.node === 'node-1')!;
    const older = (name: string) =>
      lab!.objects.find((o) => (o as { metadata?: { name?: string } }).metadata?.name === name) as Raw;
    // shop/db was created in the first sync, long before dns-from-shop-only.
    const db = older('db');
    assert.ok(db, 'the shop has a policy db');
    const spec = db.spec as { ingress: { ports?: { port: number | string }[] }[] };
    const changed = { ...db, spec: { ...spec, ingress: [{ ...spec.ingress[0], ports: [{ port: 6432 }] }] } };
    const steps: [string, () => object[], boolean][] = [
      ['a change to an older key', () => [changed], false],
      ['a deletion', () => lab!.objects.filter((o) => o !== older('dns-from-shop-only')), true],
    ];
    for (const [what, change, prune] of steps) {
      process.kill(agent1.pid, 'SIGSTOP');
      paused.push(agent1.pid);
      const report = await lab.apply(change(), prune);
      assert.equal(report.keysWritten, 1, what);
      const lagging = await lab.waitRealized(1500);
      assert.deepEqual(
        lagging.lagging.map((l) => l.node),
        ['node-1'],
        `${what}: node-1 is reported lagging`,
      );
      process.kill(agent1.pid, 'SIGCONT');
      assert.deepEqual((await lab.waitRealized(REALIZE_MS)).lagging, [], what);
    }
    assert.equal(tablesDiffer(lab), '');
    await assertProbeAgrees(lab);
  });

  it('apply while etcd is paused, killed or led by another reflector: one line, nothing recorded; etcd restarts over its stale socket', async () => {
    assert.ok(lab);
    const { ControlPlaneLab } = await loadControlPlaneLab();
    const change = parseAllDocuments(
      readFileSync(join(ROOT, 'examples/lab/dns-from-shop-only.yaml'), 'utf8'),
    ).map((d) => d.toJS() as object);
    const recorded = (): string => readFileSync(join(stateRoot, name, 'control-plane.json'), 'utf8');
    const applyFile = join(stateRoot, 'change.yaml');
    writeFileSync(applyFile, readFileSync(join(ROOT, 'examples/lab/dns-from-shop-only.yaml')));
    const labApply = (...extra: string[]) =>
      cli(['lab', 'apply', '--name', name, '--state-dir', stateRoot, '-f', applyFile, ...extra]);
    const state = recorded();

    // Another reflector leads and does not step down: apply gives up at its deadline, naming it.
    const reflectorStore = await connectEtcd(labEtcdConnection(lab.record.etcd, REFLECTOR_USER));
    const holder = await campaign(reflectorStore, '/palisade/v1/meta/reflector/leader', 'gitops-reflector', {
      ttlSeconds: 30,
    });
    try {
      const started = Date.now();
      const led = await labApply('--etcd-timeout', '2');
      assert.equal(led.code, 1);
      assert.equal(
        led.stderr,
        'palisade: reflector gitops-reflector leads under /palisade/v1/meta/reflector/leader and did not step down within 2 s (stop it, or let it write the change)\n',
      );
      assert.ok(Date.now() - started < 15_000);
      assert.equal(recorded(), state, 'nothing recorded');
    } finally {
      await holder?.resign();
      reflectorStore.close();
    }

    // etcd paused: no answer within the deadline.
    const etcdPid = lab.record.etcd.pid;
    process.kill(etcdPid, 'SIGSTOP');
    paused.push(etcdPid);
    try {
      const frozen = await labApply('--etcd-timeout', '2');
      assert.equal(frozen.code, 1);
      assert.match(
        frozen.stderr,
        /^palisade: the lab's etcd: cannot reach etcd at https:\/\/127\.0\.0\.1:\d+: no answer within 5 s\n$/,
      );
      assert.equal(recorded(), state);
    } finally {
      process.kill(etcdPid, 'SIGCONT');
    }

    // etcd killed: its unix socket stays behind; apply fails in one line, then etcd restarts.
    process.kill(etcdPid, 'SIGKILL');
    // Gone, not only a zombie: Go's other threads may hold the socket a moment longer.
    await waitFor(() => !existsSync(`/proc/${etcdPid}`));
    assert.ok(existsSync(lab.record.etcd.socket), 'SIGKILL leaves the socket');
    const down = await labApply();
    assert.equal(down.code, 1);
    assert.match(
      down.stderr,
      /^palisade: the lab's etcd: cannot reach etcd at https:\/\/127\.0\.0\.1:\d+: .*\n$/,
    );
    assert.equal(recorded(), state);
    lab.close();
    lab = await ControlPlaneLab.attach(name, { stateRoot }).catch(() => undefined);
    assert.equal(lab, undefined, 'attach fails while etcd is down');
    const restarted = await cli(['lab', 'restart-etcd', '--name', name, '--state-dir', stateRoot]);
    assert.equal(restarted.code, 0, restarted.stderr);
    assert.match(
      restarted.stdout,
      /^etcd of lab \S+ runs again: https:\/\/127\.0\.0\.1:\d+ \(pid \d+, .*etcd\.sock:0\)\n$/,
    );
    lab = await ControlPlaneLab.attach(name, { stateRoot });
    assert.notEqual(lab.record.etcd.pid, etcdPid);
    const report = await lab.apply(change);
    assert.equal(report.keysWritten, 1);
    assert.deepEqual((await lab.waitRealized(REALIZE_MS)).lagging, []);
    assert.equal(tablesDiffer(lab), '');
    await assertProbeAgrees(lab);
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

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
