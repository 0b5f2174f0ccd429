/**
 * `palisade render --target ebpf`: printed without root (one node's maps as JSON), refused with
 * --apply and no --node, and as root with --apply --netns: the program loaded and pinned under
 * the namespace's directory, attached to the interface each local pod address is routed to, the
 * maps holding the policy; a second apply takes over the maps and writes only what changed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/index.ts';
import {
  attach,
  attachedDevices,
  configFlags,
  frameOf,
  layout,
  isLoaded,
  loadProgram,
  pinDir,
  pruneLinks,
  PinnedMaps,
  PinnedProgram,
  TC_ACT_OK,
  TC_ACT_SHOT,
  unload,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { liveContent, readBack } from '../../src/datapaths/ebpf/index.ts';
import { cli } from '../helpers/cli.ts';
import { ipOf } from '../helpers/builders.ts';
import { needsEbpf } from '../helpers/ebpf.ts';

const manifests = (dbPort: number): string => `
apiVersion: v1
kind: Namespace
metadata: { name: a }
---
apiVersion: v1
kind: Pod
metadata: { name: web, namespace: a, labels: { app: web } }
spec: { nodeName: n1, containers: [{ name: c }] }
status: { phase: Running, podIP: 10.70.0.1 }
---
apiVersion: v1
kind: Pod
metadata: { name: db, namespace: a, labels: { app: db } }
spec: { nodeName: n1, containers: [{ name: c }] }
status: { phase: Running, podIP: 10.70.0.2 }
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: db, namespace: a }
spec:
  podSelector: { matchLabels: { app: db } }
  ingress: [{ from: [{ podSelector: { matchLabels: { app: web } } }], ports: [{ port: ${dbPort} }] }]
`;

describe('render --target ebpf', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-ebpf-render-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('prints one node’s maps: records by address, tables with their entries', async () => {
    const result = await cli([
      'render',
      '--target',
      'ebpf',
      '-f',
      file('c.yaml', manifests(80)),
      '--node',
      'n1',
    ]);
    assert.equal(result.code, 0, result.stderr);
    const doc = JSON.parse(result.stdout) as {
      node: string;
      records: { address: string; tables?: Record<string, number> }[];
      tables: { id: number; ports: { port: number }[]; groups: { group: string }[] }[];
    };
    assert.equal(doc.node, 'n1');
    const db = doc.records.find((r) => r.address === '10.70.0.2');
    const table = doc.tables.find((t) => t.id === db?.tables?.ingress);
    assert.deepEqual(
      table?.ports.map((p) => p.port),
      [80],
    );
    assert.deepEqual(
      table?.groups.map((g) => g.group),
      ['ns=a;pod=app=web'],
    );
  });

  it('refuses --apply without --node', async () => {
    const result = await cli(['render', '--target', 'ebpf', '-f', file('d.yaml', manifests(80)), '--apply']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--apply|root/);
  });

  describe('--apply --netns', { skip: needsEbpf('render --apply of the eBPF datapath') }, () => {
    const netns = `pe-${process.pid}`;
    const instance = { instance: `netns-${netns}` };
    before(async () => {
      const lines = [
        `netns add ${netns}`,
        `link add web0 netns ${netns} type veth peer name web1`,
        `link add db0 netns ${netns} type veth peer name db1`,
      ];
      for (const line of lines) assert.equal((await run('ip', line.split(' '))).code, 0, line);
      for (const line of [
        'link set web0 up',
        'link set db0 up',
        'route add 10.70.0.1 dev web0',
        'route add 10.70.0.2 dev db0',
      ])
        assert.equal((await run('ip', ['-n', netns, ...line.split(' ')])).code, 0, line);
    });
    after(async () => {
      unload(instance);
      await run('ip', ['link', 'delete', 'web1']);
      await run('ip', ['link', 'delete', 'db1']);
      await run('ip', ['netns', 'delete', netns]);
    });

    it('loads, pins and attaches the program to each pod’s interface; a second apply writes only the change', async () => {
      const args = ['render', '--target', 'ebpf', '--node', 'n1', '--apply', '--netns', netns, '-f'];
      const first = await cli([...args, file('e.yaml', manifests(80))]);
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(attachedDevices(netns).sort(), ['db0', 'web0']);
      const to = PinnedProgram.open(instance, 'to_pod');
      const web = ipOf('10.70.0.1');
      const db = ipOf('10.70.0.2');
      try {
        const packet = (port: number, srcPort: number) =>
          frameOf({ src: web, dst: db, protocol: 'TCP', srcPort, dstPort: port });
        assert.equal(to.run(packet(80, 30001)).retval, TC_ACT_OK);
        assert.equal(to.run(packet(81, 30002)).retval, TC_ACT_SHOT);
        const maps = PinnedMaps.open(instance);
        const before = readBack(maps);
        const second = await cli([...args, file('f.yaml', manifests(81))]);
        assert.equal(second.code, 0, second.stderr);
        const after = readBack(maps);
        maps.close();
        assert.equal(after.start.epoch, before.start.epoch + 1, 'one switch');
        assert.equal(liveContent(after).tables.length, 1, 'the old table is gone');
        assert.equal(to.run(packet(80, 30003)).retval, TC_ACT_SHOT);
        assert.equal(to.run(packet(81, 30004)).retval, TC_ACT_OK);
      } finally {
        to.close();
      }
    });

    it('--no-direct-delivery keeps every packet on the host’s path; applying without it delivers again', async () => {
      const args = ['render', '--target', 'ebpf', '--node', 'n1', '--apply', '--netns', netns, '-f'];
      const flags = () => {
        const maps = PinnedMaps.open(instance);
        try {
          return configFlags(maps);
        } finally {
          maps.close();
        }
      };
      const off = await cli([...args, file('h.yaml', manifests(80)), '--no-direct-delivery']);
      assert.equal(off.code, 0, off.stderr);
      assert.equal(flags() & layout.CFG_NO_DIRECT, layout.CFG_NO_DIRECT);
      const on = await cli([...args, file('h.yaml', manifests(80))]);
      assert.equal(on.code, 0, on.stderr);
      assert.equal(flags() & layout.CFG_NO_DIRECT, 0);
      assert.equal((JSON.parse(on.stdout) as { directDelivery: boolean }).directDelivery, true);
    });

    it('turns direct delivery off, and says why, where the host would not pick a connection up mid-stream', async () => {
      const args = ['render', '--target', 'ebpf', '--node', 'n1', '--apply', '--netns', netns, '-f'];
      const loose = (value: number) =>
        run('nsenter', [
          `--net=/run/netns/${netns}`,
          'sysctl',
          '-qw',
          `net.netfilter.nf_conntrack_tcp_loose=${value}`,
        ]);
      assert.equal((await loose(0)).code, 0);
      try {
        const applied = await cli([...args, file('i.yaml', manifests(80))]);
        assert.equal(applied.code, 0, applied.stderr);
        assert.match(
          applied.stderr,
          /^palisade: warning: direct delivery is off: net.netfilter.nf_conntrack_tcp_loose is 0 in network namespace pe-\d+, /m,
        );
        assert.equal((JSON.parse(applied.stdout) as { directDelivery: boolean }).directDelivery, false);
        const maps = PinnedMaps.open(instance);
        const flags = configFlags(maps);
        maps.close();
        assert.equal(flags & layout.CFG_NO_DIRECT, layout.CFG_NO_DIRECT);
      } finally {
        await loose(1);
      }
      const again = await cli([...args, file('i.yaml', manifests(80))]);
      assert.equal(again.stderr, '', 'on again: nothing to say');
    });

    it('leaves other programs on the interface, unpins the links of interfaces that are gone, and keeps links through a reload', async () => {
      // Runs after the apply above: the program is pinned and linked to web0 and db0.
      const tc = (args: string) => run('nsenter', [`--net=/run/netns/${netns}`, 'tc', ...args.split(' ')]);
      const links = join(pinDir(instance), 'links');
      // A program of someone else's (a CNI's; cls_bpf is the one classifier this kernel has, so
      // it is our to_pod, at another priority) on db0's clsact, and ours there by tc from before.
      const foreign = join(pinDir(instance), 'progs', 'to_pod');
      assert.equal((await tc('qdisc replace dev db0 clsact')).code, 0);
      assert.equal((await tc(`filter add dev db0 ingress pref 5 handle 5 bpf da pinned ${foreign}`)).code, 0);
      attach(instance, netns, 'db0', { tcOnly: true });
      assert.match((await tc('filter show dev db0 ingress')).stdout, /from_pod/);
      attach(instance, netns, 'db0');
      const left = (await tc('filter show dev db0 ingress')).stdout;
      assert.match(left, /pref 5 bpf .*to_pod/, 'the other program stays');
      assert.doesNotMatch(left, /from_pod/, 'our tc filter gives way to the link');
      assert.ok(existsSync(join(links, 'db0-ingress')));

      // A pod's interface deleted: its links' pins go at the next attach of new pods.
      assert.equal(
        (await run('ip', ['-n', netns, 'link', 'add', 'gone0', 'type', 'veth', 'peer', 'gone1'])).code,
        0,
      );
      attach(instance, netns, 'gone0');
      assert.ok(existsSync(join(links, 'gone0-egress')));
      assert.equal((await run('ip', ['-n', netns, 'link', 'delete', 'gone0'])).code, 0);
      pruneLinks(instance, netns);
      assert.ok(!existsSync(join(links, 'gone0-ingress')) && !existsSync(join(links, 'gone0-egress')));
      assert.ok(existsSync(join(links, 'web0-ingress')), 'a live interface keeps its links');

      // A reload (some pin missing) replaces programs and maps but not the links: unpinned, a
      // link would leave its interface with no program at all until the next attach.
      rmSync(join(pinDir(instance), 'maps', 'records'));
      assert.equal(loadProgram(instance), true);
      assert.deepEqual(attachedDevices(netns).sort(), ['db0', 'web0']);
    });

    it('says in one line which tool is missing — bpftool, then clang — and pins nothing', async () => {
      const tools = mkdtempSync(join(tmpdir(), 'palisade-no-clang-'));
      symlinkSync('/usr/sbin/bpftool', join(tools, 'bpftool'));
      // A namespace no earlier apply loaded a program for (the tools are checked before loading).
      const missing = `${netns}-none`;
      const args = ['render', '--target', 'ebpf', '--node', 'n1', '--apply', '--netns', missing];
      const path = process.env.PATH;
      const results = [];
      try {
        for (const dir of [join(tools, 'nothing'), tools]) {
          process.env.PATH = dir;
          results.push(await cli([...args, '-f', file('g.yaml', manifests(80))]));
        }
      } finally {
        process.env.PATH = path;
        rmSync(tools, { recursive: true, force: true });
      }
      assert.deepEqual(
        results.map((r) => [r.code, r.stderr]),
        [
          [
            1,
            'palisade: the eBPF datapath needs bpftool to load its program (Debian: apt-get install bpftool)\n',
          ],
          [
            1,
            'palisade: the eBPF datapath needs clang to compile its program (Debian: apt-get install clang llvm libbpf-dev)\n',
          ],
        ],
      );
      assert.ok(
        !isLoaded({ instance: `netns-${missing}` }) && !existsSync(`/sys/fs/bpf/palisade/netns-${missing}`),
      );
    });
  });
});
