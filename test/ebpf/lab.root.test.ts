/**
 * `palisade lab --datapath ebpf` against the kernel (root, clang, bpftool): docs/commands/lab.md's example
 * run command by command with its output compared; the programs attached to every pod's veth and
 * pinned per node; a probe that writes nothing (drift is noted and probed as the kernel holds it)
 * and an apply that corrects it; `down` leaving no pin, namespace or program behind — also after
 * an `up` that failed half way (a bpftool that refuses the second node's load).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attachedDevices,
  isLoaded,
  layout,
  linkOf,
  pinDir,
  pinnedInstances,
  PinnedMaps,
  unload,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { listNamespaces } from '../../src/lab/network.ts';
import { addressOf } from '../../src/datapaths/ebpf/index.ts';
import { ipOf } from '../helpers/builders.ts';
import { cli, type CliResult } from '../helpers/cli.ts';
import { needsEbpf } from '../helpers/ebpf.ts';

const SKIP = needsEbpf('the eBPF lab');
const ROOT = join(import.meta.dirname, '..', '..');
/** A page's eBPF lab example: the ```text block of `$ sudo npx palisade lab …` commands and their output. */
function ebpfLabBlock(page: string): string | undefined {
  return [...readFileSync(join(ROOT, page), 'utf8').matchAll(/```text\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? '')
    .find((text) => text.includes('lab up --datapath ebpf'));
}

/** docs/commands/lab.md's eBPF lab example: each `$ sudo npx palisade lab …` command and its output. */
function labExample(): { args: string[]; expected: string }[] {
  const block = ebpfLabBlock('docs/commands/lab.md');
  assert.ok(block, 'docs/commands/lab.md has an eBPF lab example');
  return block
    .split(/^\$ sudo npx palisade /m)
    .slice(1)
    .map((part) => {
      const [command = '', ...output] = part.split('\n');
      return { args: command.split(/\s+/), expected: output.join('\n').replace(/\n+$/, '\n') };
    });
}

/** Every trace of a lab named `name`: its namespaces, pins and state directory. */
async function traces(name: string, stateRoot: string): Promise<string[]> {
  const namespaces = [...(await listNamespaces())].filter((ns) => ns.startsWith(`pl-${name}-`));
  const pins = pinnedInstances().filter((p) => p.startsWith(`netns-pl-${name}-`));
  return [...namespaces, ...pins, ...(existsSync(join(stateRoot, name)) ? [join(stateRoot, name)] : [])];
}

/** Removes whatever a lab left (after `down` was tried): the tests' own cleanup, even on failure. */
async function scrub(name: string, stateRoot: string): Promise<void> {
  for (const ns of [...(await listNamespaces())].filter((n) => n.startsWith(`pl-${name}-`)))
    spawnSync('ip', ['netns', 'delete', ns]);
  for (const pin of pinnedInstances().filter((p) => p.startsWith(`netns-pl-${name}-`)))
    unload({ instance: pin });
  rmSync(stateRoot, { recursive: true, force: true });
}

/** Program ids pinned for a node (to see that they are freed after `down`). */
function pinnedProgramIds(instance: string): number[] {
  return ['from_pod', 'to_pod'].map((program) => {
    const shown = spawnSync(
      'bpftool',
      ['-j', 'prog', 'show', 'pinned', join(pinDir({ instance }), 'progs', program)],
      {
        encoding: 'utf8',
      },
    );
    return (JSON.parse(shown.stdout) as { id: number }).id;
  });
}

const programExists = (id: number): boolean =>
  spawnSync('bpftool', ['prog', 'show', 'id', String(id)]).status === 0;

/** Polls until `done` (the kernel frees programs and namespaces in the background). */
interface LabPlanShape {
  nodes: { name: string; netns: string }[];
  pods: { node: string; netns: string; hostInterface: string; ips: string[] }[];
}

/**
 * Checks every `peers` entry the program learned from the host's frames against the lab's own
 * interfaces — a local pod's address, its host-side veth, the pod's MAC and the veth's, as the
 * host frames a packet to the pod — and returns how many there are.
 */
function checkPeers(plan: LabPlanShape): number {
  let count = 0;
  for (const node of plan.nodes) {
    const maps = PinnedMaps.open({ instance: `netns-${node.netns}` });
    try {
      for (const [key, value] of maps.entries('peers')) {
        const pod = plan.pods.find(
          (p) =>
            p.node === node.name && p.ips.some((ip) => layout.peerKey(addressOf(ipOf(ip)).bytes).equals(key)),
        );
        const address = key.toString('hex');
        assert.ok(pod, `${node.name}: ${address} learned, a pod of this node`);
        const host = linkOf(node.netns, pod.hostInterface);
        const own = linkOf(pod.netns, 'eth0');
        assert.ok(host && own);
        const peer = layout.decodePeer(value);
        assert.equal(peer.ifindex, host.ifindex, `${address}: its host-side veth`);
        assert.deepEqual([...peer.podMac], [...own.mac], `${address}: framed to the pod's MAC`);
        assert.deepEqual([...peer.hostMac], [...host.mac], `${address}: from its veth's`);
        count++;
      }
    } finally {
      maps.close();
    }
  }
  return count;
}

async function eventually(done: () => boolean, ms = 10_000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100)))
    if (done()) return true;
  return done();
}

it("the README's lab example is the page's, which the kernel runs below", () => {
  const page = ebpfLabBlock('docs/commands/lab.md');
  assert.ok(page, 'docs/commands/lab.md has an eBPF lab example');
  assert.equal(ebpfLabBlock('README.md'), page);
});

describe('lab --datapath ebpf: the example of docs/commands/lab.md', { skip: SKIP }, () => {
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-ebpf-lab-'));
  const name = `ebr${process.pid % 100000}`;
  const own = ['--name', name, '--state-dir', stateRoot];
  after(async () => {
    await cli(['lab', 'down', ...own]);
    await scrub(name, stateRoot);
  });

  it("runs as printed, attached to every pod's veth, and leaves nothing behind", async () => {
    const steps = labExample();
    assert.deepEqual(
      steps.map((s) => s.args.slice(0, 2).join(' ')),
      ['lab up', 'lab apply', 'lab probe', 'lab down'],
    );
    let programs: number[] = [];
    let plan: LabPlanShape | undefined;
    let learned = 0;
    for (const { args, expected } of steps) {
      if (args[1] === 'down') {
        const instances = pinnedInstances().filter((p) => p.startsWith(`netns-pl-${name}-`));
        assert.equal(instances.length, 2, 'a pinned program per node');
        programs = instances.flatMap(pinnedProgramIds);
        assert.ok(programs.every(programExists));
      }
      const result: CliResult = await cli([...args, ...own], { env: process.env });
      const output = result.stdout.replaceAll(`lab ${name}`, 'lab palisade');
      assert.equal(output, expected, `palisade ${args.join(' ')}\n${result.stderr}`);
      assert.equal(result.code, 0, result.stderr);
      if (args[1] === 'up') {
        const state = JSON.parse(readFileSync(join(stateRoot, name, 'lab.json'), 'utf8')) as {
          plan: LabPlanShape;
        };
        for (const node of state.plan.nodes) {
          assert.ok(
            isLoaded({ instance: `netns-${node.netns}` }),
            `${node.name}'s program and maps are pinned`,
          );
          plan = state.plan;
          const veths = state.plan.pods.filter((p) => p.node === node.name).map((p) => p.hostInterface);
          assert.deepEqual(
            attachedDevices(node.netns).sort(),
            veths.sort(),
            `${node.name}: every pod's veth`,
          );
        }
      }
      if (args[1] === 'probe' && plan) learned += checkPeers(plan);
    }
    assert.ok(
      learned > 0,
      'the probe’s connections between pods of one node taught the program where to deliver',
    );
    assert.deepEqual(await traces(name, stateRoot), []);
    assert.ok(await eventually(() => !programs.some(programExists)), 'the programs are freed');
  });
});

describe('lab --datapath ebpf: drift, probes that only look, and a failed up', { skip: SKIP }, () => {
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-ebpf-lab-'));
  const name = `ebf${process.pid % 100000}`;
  const own = ['--name', name, '--state-dir', stateRoot];
  const shop = [
    'examples/shop-running',
    'examples/shop/namespaces.yaml',
    'examples/shop/policies-shop.yaml',
  ].map((p) => join(ROOT, p));
  const fakes = mkdtempSync(join(tmpdir(), 'palisade-fake-bpftool-'));
  const probeDns = () =>
    cli(['lab', 'probe', ...own, '--port', '53', '--protocol', 'UDP', '--timeout', '400']);
  after(async () => {
    await cli(['lab', 'down', ...own]);
    await scrub(name, stateRoot);
    rmSync(fakes, { recursive: true, force: true });
  });

  before(async () => {
    const up = await cli(['lab', 'up', '--datapath', 'ebpf', ...own, '-f', ...shop]);
    assert.equal(up.code, 0, up.stderr);
  });

  it('probes what the kernel holds without writing, notes the drift, and apply corrects it', async () => {
    const coredns = '10.244.1.2';
    const maps = PinnedMaps.open({ instance: `netns-pl-${name}-node0` });
    try {
      const records = () =>
        maps.entries('records').filter(([key]) => key.includes(Buffer.from([10, 244, 1, 2])));
      assert.ok(records().length > 0, `${coredns} has records on node-1`);
      for (const [key] of records()) maps.remove('records', key);

      const probed = await probeDns();
      assert.equal(probed.code, 1, 'the missing records fail closed, unlike the evaluator');
      assert.match(probed.stderr, /^note: node-1's maps differ from the lab's policy \(\d+ operations\)/m);
      assert.match(
        probed.stdout,
        new RegExp(`→ kube-system/coredns-8d7c-h5t6r \\(${coredns}\\) UDP/53: kernel blocked`),
      );
      assert.equal(records().length, 0, 'a probe writes nothing');

      const applied = await cli([
        'lab',
        'apply',
        ...own,
        '-f',
        join(ROOT, 'examples/lab/dns-from-shop-only.yaml'),
      ]);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stderr, /note: node-1's maps differ .*this apply starts from what it holds/);
      assert.ok(records().length > 0, 'the apply wrote them back');
      const again = await probeDns();
      assert.match(again.stdout, / 0 disagreements with the reference evaluator\n$/);
      assert.equal(again.stderr, '');
    } finally {
      maps.close();
    }
  });

  it("restores a pod's filter removed by hand when a command attaches", async () => {
    const netns = `pl-${name}-node0`;
    const before = attachedDevices(netns);
    assert.ok(before.length > 1);
    const removed = before[0] as string;
    // By hand, whichever way the programs are attached: tc's qdisc, and the pinned tcx links.
    spawnSync('nsenter', [`--net=/run/netns/${netns}`, 'tc', 'qdisc', 'del', 'dev', removed, 'clsact']);
    for (const hook of ['ingress', 'egress'])
      rmSync(join(pinDir({ instance: `netns-${netns}` }), 'links', `${removed}-${hook}`), { force: true });
    assert.ok(!attachedDevices(netns).includes(removed));
    const probed = await probeDns();
    assert.equal(probed.code, 0, probed.stdout);
    assert.deepEqual(attachedDevices(netns).sort(), [...before].sort());
  });

  it('removes pins, namespaces and state when up fails half way, and says why in one line', async () => {
    const down = await cli(['lab', 'down', ...own]);
    assert.equal(down.code, 0, down.stderr);
    assert.deepEqual(await traces(name, stateRoot), []);
    // bpftool loads the first node's program and refuses the second's.
    const count = join(fakes, 'loads');
    writeFileSync(
      join(fakes, 'bpftool'),
      `#!/bin/sh\nif [ "$2" = loadall ]; then\n  echo x >> ${count}\n  if [ "$(wc -l < ${count})" -ge 2 ]; then echo "Error: refused by the test" >&2; exit 1; fi\nfi\nexec /usr/sbin/bpftool "$@"\n`,
    );
    chmodSync(join(fakes, 'bpftool'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${fakes}:${path ?? ''}`;
    let failed: CliResult;
    try {
      failed = await cli(['lab', 'up', '--datapath', 'ebpf', ...own, '-f', ...shop]);
    } finally {
      process.env.PATH = path;
    }
    assert.equal(readFileSync(count, 'utf8'), 'x\nx\n', "the first node's program was loaded");
    assert.equal(failed.code, 1);
    assert.equal(
      failed.stderr,
      'palisade: loading the eBPF program (bpftool prog loadall) failed: Error: refused by the test\n',
    );
    assert.deepEqual(await traces(name, stateRoot), []);
  });
});
