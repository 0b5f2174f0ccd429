/**
 * Helpers for the eBPF datapath's tests: an in-memory stand-in for a node's maps (with a hook
 * after every operation), node-scoped pipelines with an eBPF renderer per node, and the maps'
 * content in a form that compares across processes (tables by content key, groups by hash).
 */
import type { Cluster } from '../../src/model/types.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import { changesBetween, PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { isRoot } from '../../src/dataplane/index.ts';
import {
  loadProgram,
  pinDir,
  PinnedMaps,
  PinnedProgram,
  unload,
  type BpfMaps,
  type MapName,
  type PinLocation,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { EbpfRenderer, type EbpfContent } from '../../src/datapaths/ebpf/index.ts';
import { nodesWithPods } from '../../src/pipeline/index.ts';
import { clusterOf, type Raw } from './builders.ts';

/** A node's maps in memory: each map a Map from key hex to value. */
export class FakeMaps implements BpfMaps {
  readonly maps = new Map<MapName, Map<string, Buffer>>();
  operations = 0;
  /** Called after every put and remove. */
  afterOperation: (() => void) | undefined;

  private map(name: MapName): Map<string, Buffer> {
    let map = this.maps.get(name);
    if (!map) this.maps.set(name, (map = new Map<string, Buffer>()));
    return map;
  }

  put(name: MapName, key: Buffer, value: Buffer): void {
    this.map(name).set(key.toString('hex'), Buffer.from(value));
    this.operations++;
    this.afterOperation?.();
  }

  remove(name: MapName, key: Buffer): void {
    this.map(name).delete(key.toString('hex'));
    this.operations++;
    this.afterOperation?.();
  }

  get(name: MapName, key: Buffer): Buffer | undefined {
    return this.map(name).get(key.toString('hex'));
  }

  entries(name: MapName): [Buffer, Buffer][] {
    return [...this.map(name)].map(([key, value]) => [Buffer.from(key, 'hex'), value]);
  }

  size(name: MapName): number {
    return this.map(name).size;
  }
}

/** A node's pipeline over its own store with an eBPF renderer (over `maps` when given). */
export function nodePipeline(
  node: string,
  maps?: BpfMaps,
): { pipeline: PolicyPipeline; renderer: EbpfRenderer } {
  const state = new ClusterState();
  const renderer = new EbpfRenderer({ state, node, ...(maps ? { kernel: maps } : {}) });
  return { pipeline: new PolicyPipeline({ state, node, renderers: [renderer] }), renderer };
}

/** Every node's renderer, resynced to the cluster. */
export function renderNodes(cluster: Cluster): Map<string, EbpfRenderer> {
  const out = new Map<string, EbpfRenderer>();
  for (const node of nodesWithPods(cluster)) {
    const { pipeline, renderer } = nodePipeline(node);
    pipeline.apply({ type: 'resync', cluster });
    out.set(node, renderer);
  }
  return out;
}

export interface NormalRecord {
  readonly endpoint: boolean;
  readonly tables: readonly string[];
  readonly nodeAddress: boolean;
  readonly groups: readonly string[];
}

/** Records by address with table content keys and group hashes instead of ids. */
export function normalized(content: EbpfContent): Map<string, NormalRecord> {
  const keyOf = new Map(content.tables.map((t) => [t.id, t.entries.key]));
  const hashOf = new Map([...content.groupIds].map(([hash, id]) => [id, hash]));
  const out = new Map<string, NormalRecord>();
  for (const { text, record } of content.records) {
    if (!record) continue;
    out.set(text, {
      endpoint: record.endpoint,
      tables: record.tables.map((id) => (id === 0 ? '-' : (keyOf.get(id) ?? `missing ${id}`))),
      nodeAddress: record.nodeAddress,
      groups: record.groups.map((id) => hashOf.get(id) ?? `missing ${id}`).sort(),
    });
  }
  return out;
}

/** Local endpoints' addresses of a node in a cluster. */
export function localAddresses(cluster: Cluster, node: string): IpAddress[] {
  return cluster.endpoints.filter((e) => e.node === node && !e.hostNetwork).flatMap((e) => e.ips);
}

/** The skip reason for suites that load the BPF program (root, clang, bpftool), or false. */
export function needsEbpf(what: string): string | false {
  if (!isRoot()) return `skipped: ${what} needs root`;
  for (const [tool, args, hint] of [
    ['clang', ['--version'], 'clang llvm libbpf-dev'],
    ['bpftool', ['version'], 'bpftool'],
  ] as const) {
    const probe = spawnSync(tool, args);
    if (probe.error || probe.status !== 0) return `skipped: ${what} needs ${tool} (apt-get install ${hint})`;
  }
  return false;
}

/** A node's maps loaded and pinned for one suite (a unique instance), unpinned at its end. */
export function scratchProgram(prefix: string): { readonly location: PinLocation; maps: () => PinnedMaps } {
  const location: PinLocation = { instance: `${prefix}-${process.pid}` };
  let maps: PinnedMaps | undefined;
  before(() => {
    loadProgram(location);
    maps = PinnedMaps.open(location);
  });
  after(() => {
    maps?.close();
    unload(location);
  });
  return {
    location,
    maps: () => {
      if (!maps) throw new Error('the program is not loaded yet');
      return maps;
    },
  };
}

/**
 * A map's entries as `bpftool map dump` prints them: raw bytes, and BTF's view of the fields (a
 * per-CPU map's as `{ values: [{ cpu, value }] }`).
 */
export function bpftoolDump(
  location: PinLocation,
  map: MapName,
): { key: Buffer; value: Buffer; formatted: unknown }[] {
  const text = execFileSync('bpftool', ['-j', 'map', 'dump', 'pinned', join(pinDir(location), 'maps', map)], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  const bytes = (hex: readonly string[]) => Buffer.from(hex.map((h) => parseInt(h, 16)));
  // A per-CPU map's entry has `values` (one per CPU) instead of `value`: its bytes are left empty.
  return (JSON.parse(text) as { key: string[]; value?: string[]; formatted: unknown }[]).map((e) => ({
    key: bytes(e.key),
    value: bytes(e.value ?? []),
    formatted: e.formatted,
  }));
}

/** Maps read through bpftool (for readback compared with what libbpf wrote). */
export function bpftoolMaps(location: PinLocation): BpfMaps {
  return {
    put: () => assert.fail('read only'),
    remove: () => assert.fail('read only'),
    get: (map, key) => bpftoolDump(location, map).find((e) => e.key.equals(key))?.value,
    entries: (map) => bpftoolDump(location, map).map((e) => [e.key, e.value]),
  };
}

/** A node's two hooks as test runs over a loaded program, and its pipeline's updates. */
export interface NodeHooks {
  from(frame: Buffer): number;
  to(frame: Buffer): number;
  /** Applies the change from the current objects to `next` (an update: the epoch moves). */
  update(next: Raw[]): void;
  close(): void;
}

/** Node n1's pipeline over a scratch program's maps, resynced to `objects`, and its two programs. */
export function nodeHooks(
  program: { readonly location: PinLocation; maps: () => PinnedMaps },
  objects: Raw[],
  recheckFlows = true,
): NodeHooks {
  const state = new ClusterState();
  const renderer = new EbpfRenderer({ state, node: 'n1', kernel: program.maps(), recheckFlows });
  const pipeline = new PolicyPipeline({ state, node: 'n1', renderers: [renderer] });
  let current = clusterOf(objects);
  pipeline.apply({ type: 'resync', cluster: current });
  const from = PinnedProgram.open(program.location, 'from_pod');
  const to = PinnedProgram.open(program.location, 'to_pod');
  return {
    from: (frame) => from.run(frame).retval,
    to: (frame) => to.run(frame).retval,
    update(next) {
      const cluster = clusterOf(next);
      pipeline.applyBatch(changesBetween(current, cluster));
      current = cluster;
    },
    close() {
      renderer.settle();
      from.close();
      to.close();
    },
  };
}
