/**
 * What the loader leaves on a node besides its own programs (root, clang, bpftool): `detach`
 * removes our programs from an interface and nothing else — another component's tc filters on
 * the same device and its clsact qdisc stay —, a load the kernel (here: a bpftool) refuses leaves
 * no directory under the pin root, and a pinned node whose maps have another shape than this
 * version's — the program's own per-CPU maps too — is refused with a message naming the map.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attach,
  attachedDevices,
  detach,
  EbpfError,
  loadProgram,
  pinDir,
  PinnedMaps,
  unload,
  type PinLocation,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { needsEbpf, scratchProgram } from '../helpers/ebpf.ts';

const SKIP = needsEbpf('the loader’s attach and load tests');

const inNetns = (netns: string, argv: string[]) =>
  spawnSync('nsenter', [`--net=/run/netns/${netns}`, ...argv], { encoding: 'utf8' });

describe('detach removes only our programs', { skip: SKIP }, () => {
  const program = scratchProgram('attach');
  const netns = `pl-attach-${process.pid}`;
  const device = 'v0';
  before(() => {
    spawnSync('ip', ['netns', 'add', netns]);
    spawnSync('ip', ['-n', netns, 'link', 'add', device, 'type', 'veth', 'peer', 'name', 'v1']);
  });
  after(() => void spawnSync('ip', ['netns', 'delete', netns]));

  /** Another component's filters: classic BPF on egress (a bpf filter at another pref), u32 on ingress. */
  const addOthers = () => {
    inNetns(netns, ['tc', 'qdisc', 'replace', 'dev', device, 'clsact']);
    const added = [
      ['egress', 'pref', '7', 'bpf', 'bytecode', '1,6 0 0 0,', 'classid', '1:1'],
      ['ingress', 'pref', '7', 'u32', 'match', 'u32', '0', '0', 'classid', '1:1'],
    ].map((args) => inNetns(netns, ['tc', 'filter', 'add', 'dev', device, ...args]));
    for (const a of added) assert.equal(a.status, 0, a.stderr);
  };
  const filters = (hook: string) => inNetns(netns, ['tc', 'filter', 'show', 'dev', device, hook]).stdout;

  for (const tcOnly of [true, false])
    it(`with ${tcOnly ? 'tc (clsact)' : 'tcx links'}: the other filters and the qdisc stay`, () => {
      addOthers();
      attach(program.location, netns, device, { tcOnly });
      assert.deepEqual(attachedDevices(netns), [device]);
      if (tcOnly) assert.match(filters('ingress'), / name from_pod /);
      detach(netns, device, program.location);
      assert.deepEqual(attachedDevices(netns), [], 'ours are gone');
      assert.doesNotMatch(filters('ingress') + filters('egress'), /from_pod|to_pod/);
      assert.match(filters('egress'), /pref 7 bpf .*bytecode '1,6 0 0 0'/, 'the classic BPF filter stays');
      assert.match(filters('ingress'), /pref 7 u32 /, 'the u32 filter stays');
      assert.match(inNetns(netns, ['tc', 'qdisc', 'show', 'dev', device]).stdout, /qdisc clsact /);
      inNetns(netns, ['tc', 'qdisc', 'del', 'dev', device, 'clsact']);
    });
});

describe('a refused load', { skip: SKIP }, () => {
  const fakes = mkdtempSync(join(tmpdir(), 'palisade-fake-bpftool-'));
  const location: PinLocation = { instance: `refused-${process.pid}` };
  after(() => {
    unload(location);
    rmSync(fakes, { recursive: true, force: true });
  });

  it('leaves no directory under the pin root', () => {
    writeFileSync(
      join(fakes, 'bpftool'),
      '#!/bin/sh\nif [ "$2" = loadall ]; then echo "Error: refused by the test" >&2; exit 1; fi\nexec /usr/sbin/bpftool "$@"\n',
    );
    chmodSync(join(fakes, 'bpftool'), 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${fakes}:${path ?? ''}`;
    try {
      assert.throws(() => loadProgram(location), EbpfError);
    } finally {
      process.env.PATH = path;
    }
    assert.equal(existsSync(pinDir(location)), false, pinDir(location));
  });
});

describe('pinned maps of another shape', { skip: SKIP }, () => {
  // The per-CPU maps nothing but the program reads or writes: a pinned node from another header
  // differs there as much as in the maps the renderer writes.
  for (const [map, type] of [
    ['verdicts', 'percpu_array'],
    ['judging', 'percpu_array'],
    ['handoffs', 'percpu_array'],
    ['scratch', 'percpu_array'],
  ] as const)
    it(`are refused with a message naming the map: ${map}`, () => {
      const location: PinLocation = { instance: `shape-${map}-${process.pid}` };
      try {
        loadProgram(location);
        const pin = join(pinDir(location), 'maps', map);
        rmSync(pin);
        const created = spawnSync('bpftool', [
          'map',
          'create',
          pin,
          'type',
          type,
          'key',
          '4',
          'value',
          '32',
          'entries',
          '1',
          'name',
          map,
        ]);
        assert.equal(created.status, 0, String(created.stderr));
        assert.equal(loadProgram(location), false, 'a pinned node is reopened, not loaded again');
        assert.throws(
          () => PinnedMaps.open(location).close(),
          (error: Error) =>
            error instanceof EbpfError &&
            error.message.includes(`maps/${map} has 4-byte keys and 32-byte values`) &&
            /another version pinned it; remove it \(`lab down`, or `rm -r \/sys\/fs\/bpf\/palisade\/[^`]+`\) and apply again/.test(
              error.message,
            ),
        );
      } finally {
        unload(location);
      }
    });
});
