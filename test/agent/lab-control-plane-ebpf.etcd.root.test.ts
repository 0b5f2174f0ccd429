/**
 * `lab up --control-plane --datapath ebpf` as root with everything real: etcd, the reflector, and
 * one `palisade agent --datapath ebpf` per node keeping its node's BPF program and maps — the
 * agents, not the lab, load, attach and write them. Up → the probed matrix ≡ the reference; a
 * change applied through etcd reaches the maps through the agents; status shows the eBPF agents;
 * down leaves no process, namespace, pin or directory behind.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadCluster } from '../../src/ingest/index.ts';
import { loadControlPlaneLab, probeLab, type ControlPlaneLab } from '../../src/lab/index.ts';
import { pinDir } from '../../src/datapaths/ebpf/kernel/index.ts';
import { run } from '../../src/dataplane/index.ts';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { needsEbpf } from '../helpers/ebpf.ts';
import type { Raw } from '../helpers/builders.ts';
import { ebpfDistanceFromFresh } from './helpers.ts';
import { alive, PORTS, REALIZE_MS, ROOT, SHOP } from './lab-control-plane-shared.ts';

const skip = needsEtcd || needsEbpf('the lab with a control plane on eBPF');

describe(
  'lab up --control-plane --datapath ebpf (real etcd, reflector, eBPF agents and packets)',
  { skip },
  () => {
    const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-cplab-ebpf-'));
    const name = `cpe${process.pid % 100000}`;
    let lab: ControlPlaneLab | undefined;

    after(async () => {
      lab?.close();
      const { ControlPlaneLab } = await loadControlPlaneLab();
      if (existsSync(join(stateRoot, name)))
        await ControlPlaneLab.down(name, { stateRoot }).catch(() => undefined);
      rmSync(stateRoot, { recursive: true, force: true });
    });

    /** Every node's maps ≡ a fresh render of the lab's objects: '' or what differs. */
    const mapsDiffer = (opened: ControlPlaneLab): string =>
      opened.plan.nodes
        .map(
          (node) =>
            [node.name, ebpfDistanceFromFresh(node.netns, opened.objects as Raw[], node.name)] as const,
        )
        .filter(([, d]) => d !== 0)
        .map(([n, d]) => `${n}: ${d}`)
        .join(', ');

    const assertProbeAgrees = async (opened: ControlPlaneLab): Promise<number> => {
      const report = await probeLab(opened, PORTS, { timeoutMs: 800 });
      assert.deepEqual(
        report.disagreements.map((r) => `${r.from} → ${r.to} ${r.protocol}/${r.port}: kernel ${r.observed}`),
        [],
      );
      return report.results.filter((r) => r.observed).length;
    };

    it('up, probe ≡ reference, a change through etcd, status, down: nothing left', async () => {
      const { ControlPlaneLab } = await loadControlPlaneLab();
      const loaded = await loadCluster(SHOP);
      lab = await ControlPlaneLab.up(
        name,
        loaded.rawObjects.map((r) => r.value as object),
        loaded.cluster,
        { stateRoot, datapath: 'ebpf', realizeTimeoutMs: REALIZE_MS },
      );
      const nodes = lab.plan.nodes;
      // The agents pinned their nodes' programs and maps, and enforce them.
      for (const node of nodes) assert.ok(existsSync(pinDir({ instance: `netns-${node.netns}` })));
      assert.equal(mapsDiffer(lab), '');
      const before = await assertProbeAgrees(lab);
      assert.ok(before > 0);
      const status = await lab.status();
      assert.deepEqual(
        status.status.nodes.map((n) => [n.node, n.state, n.record?.phase, n.record?.datapath]),
        nodes.map((n) => [n.name, 'alive', 'ready', 'ebpf']),
      );
      // A change through etcd: DNS only from the shop namespace.
      const dns = parseAllDocuments(
        readFileSync(join(ROOT, 'examples/lab/dns-from-shop-only.yaml'), 'utf8'),
      ).map((d) => d.toJS() as object);
      await lab.apply(dns);
      const reading = await lab.waitRealized(REALIZE_MS);
      assert.deepEqual(reading.lagging, []);
      assert.equal(mapsDiffer(lab), '');
      assert.ok((await assertProbeAgrees(lab)) < before, 'the change denies some connections');
      const agents = lab.record.agents.map((a) => a.pid);
      lab.close();
      lab = undefined;
      await ControlPlaneLab.down(name, { stateRoot });
      assert.ok(
        agents.every((pid) => !alive(pid)),
        'every agent stopped',
      );
      for (const node of nodes)
        assert.ok(!existsSync(pinDir({ instance: `netns-${node.netns}` })), `${node.name}'s pins are gone`);
      const namespaces = (await run('ip', ['netns', 'list'])).stdout;
      assert.ok(!nodes.some((n) => namespaces.includes(n.netns)), 'the namespaces are gone');
    });
  },
);
