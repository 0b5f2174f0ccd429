/**
 * The maps in the kernel, dumped with `bpftool map dump` (root, clang, bpftool): for random
 * clusters, every local endpoint's tables as the kernel holds them are the in-process
 * classifier's tables (each slot's ports, ranges, CIDR prefixes, groups and tier actions), and
 * every address record holds exactly the groups of this node's tables that contain the address;
 * and the layout module (layout.ts) reads every field where the program's own BTF puts it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatIp } from '../../src/net/ip.ts';
import { referenceMembers } from '../../src/classifier/index.ts';
import { EbpfError, layout, type MapName } from '../../src/datapaths/ebpf/kernel/index.ts';
import {
  liveContent,
  readBack,
  referenceHash,
  tableEntries,
  type TableEntries,
} from '../../src/datapaths/ebpf/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';
import { bpftoolDump, bpftoolMaps, needsEbpf, nodePipeline, scratchProgram } from '../helpers/ebpf.ts';

const SKIP = needsEbpf('reading the BPF maps back');
const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

/** A table's entries without what the kernel does not hold (slot labels, group references). */
const comparable = (t: TableEntries) => ({
  ...t,
  labels: [],
  groups: t.groups.map((g) => ({ hash: g.hash, bitmap: g.bitmap })),
});

describe('the BPF maps, read back with bpftool', { skip: SKIP }, () => {
  const program = scratchProgram('rb');

  it('hold the in-process classifier’s tables and every address’s groups (random clusters)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }), (objects) => {
        const cluster = clusterOf(objects);
        const { pipeline, renderer } = nodePipeline('n1', program.maps());
        pipeline.apply({ type: 'resync', cluster });
        renderer.settle();
        const kernel = liveContent(readBack(bpftoolMaps(program.location)));
        const tables = new Map(kernel.tables.map((t) => [t.id, t.entries]));
        const records = new Map(kernel.records.map((r) => [r.text, r.record]));
        const hashOf = new Map([...kernel.groupIds].map(([hash, id]) => [id, hash]));
        const classifier = renderer.tablesClassifier;
        const references = new Set<string>();
        for (const endpoint of cluster.endpoints) {
          if (endpoint.node !== 'n1' || endpoint.hostNetwork) continue;
          for (const ip of endpoint.ips) {
            const maps = classifier.mapsOf(ip);
            const record = records.get(formatIp(ip));
            assert.ok(record?.endpoint, `${endpoint.id}: an endpoint record`);
            const slots = [
              maps?.ingress,
              maps?.egress,
              maps?.admin?.ingress,
              maps?.admin?.egress,
              maps?.baseline?.ingress,
              maps?.baseline?.egress,
            ];
            slots.forEach((table, slot) => {
              const id = record.tables[slot] as number;
              if (!table) return assert.equal(id, 0, `${endpoint.id} slot ${slot}: no table`);
              const expected =
                'actions' in table ? tableEntries(table.table, table.actions) : tableEntries(table);
              const actual = tables.get(id);
              assert.ok(actual, `${endpoint.id} slot ${slot}: table ${id} in the kernel`);
              assert.deepEqual(comparable(actual), comparable(expected), `${endpoint.id} slot ${slot}`);
              for (const g of expected.groups) references.add(g.reference as string);
            });
          }
        }
        // Every address's groups: exactly the node's group references that contain it.
        const expectedGroups = new Map<string, string[]>();
        for (const reference of references)
          for (const ip of referenceMembers(pipeline.state, reference)) {
            const list = expectedGroups.get(formatIp(ip)) ?? [];
            list.push(referenceHash(reference));
            expectedGroups.set(formatIp(ip), list);
          }
        for (const [text, record] of records) {
          const groups = (record?.groups ?? []).map((id) => hashOf.get(id)).sort();
          assert.deepEqual(groups, (expectedGroups.get(text) ?? []).sort(), `groups of ${text}`);
        }
        for (const text of expectedGroups.keys()) assert.ok(records.has(text), `a record for ${text}`);
      }),
      { numRuns: Math.max(5, Math.ceil(RUNS / 15)) },
    );
  });

  it('decodes every field where the program’s BTF says it is', () => {
    const { pipeline, renderer } = nodePipeline('n1', program.maps());
    pipeline.apply({
      type: 'resync',
      cluster: clusterOf([
        namespace('a'),
        pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
        pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1' }),
        policy('a', 'db', {
          podSelector: { matchLabels: { app: 'db' } },
          // 300 slots: web's group entry has 5 non-zero words, one more than an entry holds.
          ingress: Array.from({ length: 300 }, (_, i) => ({
            from: [{ podSelector: { matchLabels: { app: 'web' } } }],
            ports: [{ port: 1000 + i }],
          })),
        }),
      ]),
    });
    renderer.settle();
    const dump = (map: MapName) => {
      const entries = bpftoolDump(program.location, map);
      assert.ok(entries.length > 0, `${map} has entries`);
      return entries as { key: Buffer; value: Buffer; formatted: { key: unknown; value: unknown } }[];
    };
    for (const e of dump('records')) {
      const key = e.formatted.key as { side: number; family: number };
      const value = e.formatted.value as {
        flags: number;
        group_count: number;
        tables: number[];
        groups: number[];
      };
      const decoded = layout.decodeRecord(e.value);
      assert.equal(layout.decodeAddressKey(e.key).side, key.side);
      assert.equal(layout.decodeAddressKey(e.key).address.family, key.family);
      assert.deepEqual(
        [decoded.flags, decoded.groupCount, decoded.tables],
        [value.flags, value.group_count, value.tables],
      );
    }
    // An entry as BTF shows it and as layout.ts decodes it, in one form (u64s as JSON numbers).
    type BtfEntry = { summary: number; w: number[]; at: number[]; count: number; index: number };
    const btfEntry = (v: BtfEntry) => [Number(v.summary), v.w.map(Number), v.at, v.count, v.index];
    const decodedEntry = (e: layout.EntryValue) => {
      const w = [0, 0, 0, 0];
      const at = [0, 0, 0, 0];
      e.words.forEach((word, j) => {
        w[j] = Number(word.value);
        at[j] = word.at;
      });
      return [Number(e.summary), w, at, e.count, e.index];
    };
    for (const e of dump('tables')) {
      const value = e.formatted.value as {
        words: number;
        stride: number;
        flags: number;
        slots: number;
        l3: BtfEntry;
        any: BtfEntry[];
      };
      const decoded = layout.decodeTable(e.value);
      assert.deepEqual(
        [decoded.words, decoded.stride, decoded.flags, decoded.slots],
        [value.words, value.stride, value.flags, value.slots],
      );
      assert.deepEqual(
        [decoded.l3, ...decoded.any].map(decodedEntry),
        [value.l3, ...value.any].map(btfEntry),
      );
    }
    for (const e of dump('ports')) {
      const key = e.formatted.key as { table: number; port: number; proto: number };
      assert.deepEqual(layout.decodePortKey(e.key), {
        table: key.table,
        port: key.port,
        protocol: key.proto,
      });
      assert.deepEqual(decodedEntry(layout.decodeEntry(e.value)), btfEntry(e.formatted.value as BtfEntry));
    }
    let spilled = 0;
    for (const e of dump('groups')) {
      const key = e.formatted.key as { table: number; group: number };
      assert.deepEqual(layout.decodePairKey(e.key), [key.table, key.group]);
      const entry = layout.decodeEntry(e.value);
      assert.deepEqual(decodedEntry(entry), btfEntry(e.formatted.value as BtfEntry));
      if (entry.count > layout.ENTRY_WORDS) spilled++;
    }
    assert.ok(spilled > 0, 'an entry with more non-zero words than it holds');
    for (const e of dump('bits')) {
      const key = e.formatted.key as { table: number; index: number; word: number };
      assert.deepEqual(layout.decodeBitsKey(e.key), key);
    }
    for (const e of dump('gen'))
      assert.equal(e.value.readUInt32LE(0), (e.formatted.value as { epoch: number }).epoch);
  });

  it('refuse a write past their size with a one-line error naming the map', () => {
    const maps = program.maps();
    const name = Buffer.alloc(16, 1);
    const held = maps.entries('group_names').length;
    const written: number[] = [];
    let refused: unknown;
    try {
      for (let id = 0x7fff0000; written.length <= 1 << 16; id++) {
        maps.put('group_names', layout.u32(id), name);
        written.push(id);
      }
    } catch (error) {
      refused = error;
    } finally {
      for (const id of written) maps.remove('group_names', layout.u32(id));
    }
    assert.equal(held + written.length, 1 << 16, 'every entry up to the size was written');
    assert.ok(refused instanceof EbpfError);
    assert.match(refused.message, /^the BPF map group_names is full \(65536 entries\): [^\n]*$/);
  });
});
