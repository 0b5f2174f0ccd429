/**
 * What the eBPF benchmark's parts share (bench/ebpf.bench.ts and the files beside it): output,
 * the load average, a node's pinned maps rendered from a cluster and its configuration flags,
 * the programs' run-time statistics, and an empty program to measure the hook alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from '../src/model/types.ts';
import { PolicyPipeline } from '../src/pipeline/index.ts';
import { EbpfRenderer } from '../src/datapaths/ebpf/index.ts';
import { ClusterState } from '../src/state/index.ts';
import {
  asmIncludeDir,
  ensureBpffs,
  layout,
  pinDir,
  PinnedMaps,
  setConfigFlag as setFlag,
  type PinLocation,
} from '../src/datapaths/ebpf/kernel/index.ts';

export const say = (text: string): void => void process.stdout.write(`${text}\n`);

/** A node's pinned maps rendered from a cluster (the renderer takes over what the maps held). */
export function renderInto(location: PinLocation, node: string, cluster: Cluster): void {
  const maps = PinnedMaps.open(location);
  const state = new ClusterState();
  const renderer = new EbpfRenderer({ state, node, kernel: maps });
  new PolicyPipeline({ state, node, renderers: [renderer] }).apply({ type: 'resync', cluster });
  renderer.settle();
  maps.close();
}
/** Sets or clears a configuration flag of a node's pinned maps. */
export function setConfigFlag(location: PinLocation, flag: number, on: boolean): void {
  const maps = PinnedMaps.open(location);
  try {
    setFlag(maps, flag, on);
  } finally {
    maps.close();
  }
}

/** Every first packet judged by the tables (on), or a judgement made already this epoch taken from the verdict cache (off: the datapath's way). */
export const setJudgeEvery = (location: PinLocation, on: boolean): void =>
  setConfigFlag(location, layout.CFG_NO_VERDICT_CACHE, on);

export const load = (): string =>
  execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ');

export interface ProgramStats {
  readonly nanoseconds: number;
  readonly count: number;
  /** Run time per program (from_pod, to_pod), in the order of the paths given. */
  readonly each: readonly number[];
}

/** Programs named as the datapath's that pass every packet, pinned where attach() finds them. */
export function loadEmptyProgram(location: PinLocation, scratch: string): void {
  const source = join(scratch, 'empty.bpf.c');
  const object = join(scratch, 'empty.bpf.o');
  writeFileSync(
    source,
    [
      '#include <linux/bpf.h>',
      '#include <linux/pkt_cls.h>',
      '#include <bpf/bpf_helpers.h>',
      'SEC("tc") int from_pod(struct __sk_buff *skb) { return TC_ACT_OK; }',
      'SEC("tc") int to_pod(struct __sk_buff *skb) { return TC_ACT_OK; }',
      'char LICENSE[] SEC("license") = "GPL";',
      '',
    ].join('\n'),
  );
  execFileSync('clang', ['-O2', '-target', 'bpf', '-I', asmIncludeDir(), '-c', source, '-o', object]);
  ensureBpffs(); // before the first directory under the pin root (loader.ts says why)
  mkdirSync(pinDir(location), { recursive: true });
  execFileSync('bpftool', ['prog', 'loadall', object, join(pinDir(location), 'progs')]);
}

/** Sum of the programs' run time and run count (bpf_stats). */
export function programStats(paths: readonly string[] | undefined): ProgramStats {
  let nanoseconds = 0;
  let count = 0;
  const each: number[] = [];
  for (const path of paths ?? []) {
    const shown = JSON.parse(
      execFileSync('bpftool', ['-j', 'prog', 'show', 'pinned', path], { encoding: 'utf8' }),
    ) as {
      run_time_ns?: number;
      run_cnt?: number;
    };
    nanoseconds += shown.run_time_ns ?? 0;
    count += shown.run_cnt ?? 0;
    each.push(shown.run_time_ns ?? 0);
  }
  return { nanoseconds, count, each };
}

/** Entries a node's connection table holds (maps.h: `conntrack`). */
const CONNECTION_TABLE_SIZE = 65_536;

/** Empties a node's connection table: its next connections are inserted without evicting any. */
export function emptyConnectionTable(location: PinLocation): void {
  const maps = PinnedMaps.open(location);
  try {
    for (const [key] of maps.entries('conntrack')) maps.remove('conntrack', key);
  } finally {
    maps.close();
  }
}

/**
 * Fills a node's connection table with entries no packet has (UDP between 192.0.2.0/24 and
 * 198.51.100.0/24, documentation addresses): every insert after this evicts one, as on a node
 * that has made more connections than the table holds — a long-lived node's steady state.
 */
export function fillConnectionTable(location: PinLocation): void {
  const maps = PinnedMaps.open(location);
  try {
    const key = Buffer.alloc(layout.MAP_SHAPES.conntrack.key);
    const value = Buffer.alloc(layout.MAP_SHAPES.conntrack.value);
    key[0] = 17; // UDP
    key[1] = layout.FAMILY_V4;
    key.set([192, 0, 2], 8);
    key.set([198, 51, 100], 24);
    for (let i = 0; i < CONNECTION_TABLE_SIZE; i++) {
      key.writeUInt16LE(i, 2);
      maps.put('conntrack', key, value);
    }
  } finally {
    maps.close();
  }
}
