/**
 * The eBPF target's maps, in-process (the program itself is tested against the kernel in
 * test/ebpf/): read as the program reads them they give the reference evaluator's verdicts on
 * random clusters (IPv4, IPv6, ordered cluster policy); kept current by a node's pipeline they
 * equal a fresh render after every batch of random events; during a commit, after every single
 * map operation, the side packets read is the old policy or the new one, never a mix; a renderer
 * attaching to maps another wrote writes only what differs and deletes what nothing uses; wide
 * bitmaps (summary words) and addresses in many groups (record chunks) stay exact.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { changesBetween } from '../../src/pipeline/index.ts';
import { PROTOCOL_INDEX } from '../../src/classifier/index.ts';
import { EbpfError, layout } from '../../src/datapaths/ebpf/kernel/index.ts';
import { DataplaneError } from '../../src/dataplane/index.ts';
import type { DirectionTable } from '../../src/classifier/index.ts';
import {
  ebpfVerdicts,
  liveContent,
  NodeView,
  readBack,
  tableEntries,
} from '../../src/datapaths/ebpf/index.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf, ipOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { probeAddresses, referenceAllows } from '../helpers/compiled.ts';
import { FakeMaps, localAddresses, nodePipeline, normalized, renderNodes } from '../helpers/ebpf.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function agreesWithReference(cluster: Cluster): void {
  const renderers = renderNodes(cluster);
  const allows = ebpfVerdicts(
    [...renderers].map(([node, r]) => ({ node, output: { content: r.content(), allowNodeLocal: true } })),
  );
  const addresses = probeAddresses(cluster);
  for (const src of addresses)
    for (const dst of addresses) {
      if (src.ip.family !== dst.ip.family) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
        assert.equal(
          allows({ src: src.ip, dst: dst.ip, protocol, port }),
          expected,
          `${src.label} → ${dst.label} ${protocol}/${port}`,
        );
      }
    }
}

/** A node's side verdicts for every local endpoint against every probe address. */
function sideVerdicts(view: NodeView, cluster: Cluster, node: string): boolean[] {
  const out: boolean[] = [];
  const remotes = probeAddresses(cluster);
  for (const local of localAddresses(cluster, node))
    for (const remote of remotes) {
      if (remote.ip.family !== local.family) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        const p = PROTOCOL_INDEX[protocol];
        out.push(
          view.side('egress', local, remote.ip, p, port),
          view.side('ingress', local, remote.ip, p, port),
        );
      }
    }
  return out;
}

describe('eBPF maps, read as the program reads them', () => {
  it('≡ reference evaluator on random clusters (IPv4 and IPv6, several nodes)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 4 }), (objects) =>
        agreesWithReference(clusterOf(objects)),
      ),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  });

  it('≡ reference evaluator with ordered cluster policy (Admin and Baseline tier tables, Pass)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 6, maxPolicies: 3, maxClusterPolicies: 3 }), (objects) =>
        agreesWithReference(clusterOf(objects)),
      ),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });

  it('kept current by a node pipeline equals a fresh render after every batch of random events', () => {
    fc.assert(
      fc.property(
        fc.array(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }), {
          minLength: 2,
          maxLength: 4,
        }),
        (steps) => {
          const nodes = ['n1', 'n2'].map((node) => ({ node, ...nodePipeline(node) }));
          let previous: Cluster | undefined;
          for (const objects of steps) {
            const cluster = clusterOf(objects);
            for (const { pipeline } of nodes)
              if (previous) pipeline.applyBatch(changesBetween(previous, cluster));
              else pipeline.apply({ type: 'resync', cluster });
            for (const { node, renderer } of nodes) {
              const fresh = nodePipeline(node);
              fresh.pipeline.apply({ type: 'resync', cluster });
              assert.deepEqual(normalized(renderer.content()), normalized(fresh.renderer.content()), node);
            }
            previous = cluster;
          }
        },
      ),
      { numRuns: Math.max(10, Math.ceil(RUNS / 8)) },
    );
  });

  it('an egress named port resolved to several numbers lists them by number, whatever order the pods came in', () => {
    // Found by the property above (seed 1899701662): slots followed the members' arrival, so a
    // node kept current held a table a fresh render (an agent's restart) wrote again.
    const named = (name: string, port: number, ip: string): Raw =>
      pod('a', name, {}, { ips: [ip], node: 'n1', ports: [{ name: 'http', containerPort: port }] });
    const client = pod('a', 'client', { app: 'client' }, { ips: ['10.0.0.9'], node: 'n1' });
    const egress = policy('a', 'out', {
      podSelector: { matchLabels: { app: 'client' } },
      egress: [{ ports: [{ port: 'http' }] }],
    });
    const first = [namespace('a'), client, egress, named('late', 8080, '10.0.0.2')];
    const second = [
      namespace('a'),
      named('early', 80, '10.0.0.1'),
      client,
      egress,
      named('late', 8080, '10.0.0.2'),
    ];
    const kept = nodePipeline('n1');
    kept.pipeline.apply({ type: 'resync', cluster: clusterOf(first) });
    kept.pipeline.applyBatch(changesBetween(clusterOf(first), clusterOf(second)));
    const fresh = nodePipeline('n1');
    fresh.pipeline.apply({ type: 'resync', cluster: clusterOf(second) });
    assert.deepEqual(normalized(kept.renderer.content()), normalized(fresh.renderer.content()));
    const table = kept.renderer.content().tables.find((t) => t.entries.labels.length === 2);
    assert.deepEqual(table?.entries.labels, [
      'a/out egress[0] port http=80',
      'a/out egress[0] port http=8080',
    ]);
  });
});

describe('eBPF safe update', () => {
  it('after every map operation of a commit, packets see the old policy or the new one, never a mix', () => {
    fc.assert(
      fc.property(
        fc.array(clusterArb({ maxPods: 5, maxPolicies: 3, maxClusterPolicies: 2 }), {
          minLength: 2,
          maxLength: 3,
        }),
        (steps) => {
          const maps = new FakeMaps();
          const { pipeline } = nodePipeline('n1', maps);
          const live = () => new NodeView(liveContent(readBack(maps)));
          let previous = clusterOf(steps[0] as Raw[]);
          pipeline.apply({ type: 'resync', cluster: previous });
          for (const objects of steps.slice(1)) {
            const next = clusterOf(objects);
            // Both versions' verdicts over the union of their addresses.
            const union = clusterOf([...objects, ...(steps[0] as Raw[])]);
            const before = sideVerdicts(live(), union, 'n1');
            const states: boolean[][] = [];
            maps.afterOperation = () => states.push(sideVerdicts(live(), union, 'n1'));
            pipeline.applyBatch(changesBetween(previous, next));
            maps.afterOperation = undefined;
            const after = sideVerdicts(live(), union, 'n1');
            states.forEach((state, i) =>
              assert.ok(
                state.every((v, k) => v === before[k]) || state.every((v, k) => v === after[k]),
                `after operation ${i + 1} of ${states.length}, the live side mixes the two policies`,
              ),
            );
            previous = next;
          }
        },
      ),
      { numRuns: Math.max(6, Math.ceil(RUNS / 15)) },
    );
  });

  it('switches with one write of the epoch, records written to the side no packet reads', () => {
    const maps = new FakeMaps();
    const { pipeline, renderer } = nodePipeline('n1', maps);
    const objects = [
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1' }),
    ];
    pipeline.apply({ type: 'resync', cluster: clusterOf(objects) });
    assert.equal(renderer.epoch, 1);
    const epochOf = () => maps.get('gen', layout.u32(0))?.readUInt32LE(0);
    const writes: { map: string; epoch: number | undefined }[] = [];
    const put = maps.put.bind(maps);
    maps.put = (map, key, value) => {
      writes.push({ map, epoch: epochOf() });
      if (map === 'records')
        assert.notEqual(key.readUInt32LE(0), (epochOf() ?? 0) & 1, 'a live record written');
      put(map, key, value);
    };
    const next = [...objects, policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress'] })];
    pipeline.applyBatch(changesBetween(clusterOf(objects), clusterOf(next)));
    assert.equal(writes.filter((w) => w.map === 'gen').length, 1);
    const switched = writes.findIndex((w) => w.map === 'gen');
    assert.ok(
      writes.slice(0, switched).some((w) => w.map === 'tables'),
      'the new table before the switch',
    );
    assert.ok(
      writes.slice(switched + 1).some((w) => w.map === 'records'),
      'the old side brought level after',
    );
    assert.equal(renderer.epoch, 2);
  });
});

describe('eBPF maps read back', () => {
  const objects = (): Raw[] => [
    namespace('a', { team: 'x' }),
    pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1', 'fd00::1'], node: 'n1' }),
    pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2', 'fd00::2'], node: 'n1' }),
    pod('a', 'cache', { app: 'cache' }, { ips: ['10.0.0.3'], node: 'n2' }),
    policy('a', 'db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: 'web' } } }],
          ports: [{ port: 80 }, { port: 9000, endPort: 9100 }],
        },
        { from: [{ ipBlock: { cidr: '192.168.0.0/16', except: ['192.168.1.0/24'] } }] },
      ],
    }),
  ];

  it('a second renderer over the same maps writes nothing for the same cluster, then only what changed', () => {
    const maps = new FakeMaps();
    const first = nodePipeline('n1', maps);
    first.pipeline.apply({ type: 'resync', cluster: clusterOf(objects()) });
    const written = maps.operations;
    assert.ok(written > 10);
    const second = nodePipeline('n1', maps);
    const config = maps.operations - written; // the second renderer writes its flags
    const before = maps.operations;
    second.pipeline.apply({ type: 'resync', cluster: clusterOf(objects()) });
    assert.equal(maps.operations - before, 0, 'nothing written, not even a switch');
    assert.equal(config, 1);
    assert.deepEqual(normalized(liveContent(readBack(maps))), normalized(first.renderer.content()));

    const changed = [
      ...objects(),
      policy('a', 'web', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Egress'] }),
    ];
    const at = maps.operations;
    second.pipeline.applyBatch(changesBetween(clusterOf(objects()), clusterOf(changed)));
    const fresh = nodePipeline('n1');
    fresh.pipeline.apply({ type: 'resync', cluster: clusterOf(changed) });
    assert.deepEqual(normalized(liveContent(readBack(maps))), normalized(fresh.renderer.content()));
    // One new table, two records (web's addresses) on each side, the switch.
    assert.ok(maps.operations - at < 12, `${maps.operations - at} operations`);
  });

  it('deletes what no record uses: tables a crash left half written, unused group names, stale records', () => {
    const maps = new FakeMaps();
    nodePipeline('n1', maps).pipeline.apply({ type: 'resync', cluster: clusterOf(objects()) });
    maps.put(
      'ports',
      layout.portKey(999, 0, 80),
      layout.entryValue({ summary: 1n, words: [{ at: 0, value: 1n }], count: 1, index: 0 }),
    );
    maps.put('group_names', layout.u32(777), Buffer.alloc(16, 7));
    maps.put(
      'records',
      layout.addressKey(0, {
        family: 4,
        bytes: new Uint8Array([10, 9, 9, 9, ...new Array<number>(12).fill(0)]),
      }),
      layout.recordValue({ flags: 0, node: 0, nodeAddressOf: 0, groupCount: 0, tables: [], groups: [] }),
    );
    const fresh = nodePipeline('n1', maps);
    fresh.pipeline.apply({ type: 'resync', cluster: clusterOf(objects()) });
    fresh.renderer.settle();
    assert.equal(maps.get('ports', layout.portKey(999, 0, 80)), undefined);
    assert.equal(maps.get('group_names', layout.u32(777)), undefined);
    const back = readBack(maps);
    assert.ok(![...back.start.sides[0].keys(), ...back.start.sides[1].keys()].includes('10.9.9.9'));
    assert.deepEqual(back.raw, []);
  });
});

describe('eBPF maps beyond one word', () => {
  /**
   * A db whose `n` rules each let one client in on its own port: c{i} on 1000 + i, the clients
   * selected by pods (groups) or, with `blocks`, by their /32 (the CIDR trie). A monitor pod is
   * let in by every 64th rule too: its entry has a word in each of those words of the bitmap,
   * more than an entry holds once there are over 256 rules.
   */
  const client = (i: number): string => `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const MONITOR = '10.2.0.1';
  const manyRules = (n: number, blocks: boolean): Cluster => {
    const objects: Raw[] = [
      namespace('a'),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'monitor', { app: 'monitor' }, { ips: [MONITOR], node: 'n2' }),
    ];
    const rules: Raw[] = [];
    for (let i = 0; i < n; i++) {
      if (!blocks) objects.push(pod('a', `c${i}`, { app: `c${i}` }, { ips: [client(i)], node: 'n2' }));
      const peer = blocks
        ? { ipBlock: { cidr: `${client(i)}/32` } }
        : { podSelector: { matchLabels: { app: `c${i}` } } };
      const monitor = i % 64 === 0 ? [{ podSelector: { matchLabels: { app: 'monitor' } } }] : [];
      rules.push({ from: [peer, ...monitor], ports: [{ port: 1000 + i }] });
    }
    objects.push(policy('a', 'db', { podSelector: { matchLabels: { app: 'db' } }, ingress: rules }));
    return clusterOf(objects);
  };

  for (const [n, blocks] of [
    [70, false],
    [300, false],
    [4100, true],
  ] as const) {
    it(`${n} rule slots on one endpoint: every client on its own port only (summary stride ${n > 4096 ? 2 : 1})`, () => {
      const maps = new FakeMaps();
      nodePipeline('n1', maps).pipeline.apply({ type: 'resync', cluster: manyRules(n, blocks) });
      const view = new NodeView(liveContent(readBack(maps)));
      const db = ipOf('10.0.0.1');
      const tcp = PROTOCOL_INDEX.TCP;
      for (const i of [0, 63, 64, 65, n - 1, Math.floor(n / 2)]) {
        assert.equal(view.side('ingress', db, ipOf(client(i)), tcp, 1000 + i), true, `c${i} on its port`);
        assert.equal(
          view.side('ingress', db, ipOf(client(i)), tcp, 1000 + ((i + 1) % n)),
          false,
          `c${i} on another`,
        );
      }
      for (const i of [0, 1, 64, 65, 256, 257, n - 1])
        if (i < n)
          assert.equal(
            view.side('ingress', db, ipOf(MONITOR), tcp, 1000 + i),
            i % 64 === 0,
            `the monitor on ${1000 + i}`,
          );
      // Only an entry with more non-zero words than it holds (the monitor's, past 256 rules) uses `bits`.
      assert.equal(maps.size('bits') > 0, n > 64 * layout.ENTRY_WORDS, 'words in the bits map');
    });
  }

  // A table that wide needs millions of rules on one endpoint — far too many to compile in a
  // test — so the classifier's table is stood in for by one with that many slots and no entries:
  // the width alone decides, before any bitmap is allocated.
  it('a table wider than 65,536 words (4,194,304 rule slots) is refused in one line, the widest one is not', () => {
    const table = (slots: number) =>
      ({
        slots,
        width: 0,
        store: { words: new Uint32Array(0) },
        ports: new Map(),
        ranges: [],
        prefixes: { prim: new Map(), supp: new Map(), except: new Map() },
        groupEntries: () => [],
        l3: undefined,
        protocolAny: [undefined, undefined, undefined],
        labels: [],
      }) as unknown as DirectionTable;
    const widest = tableEntries(table(65_536 * 64));
    assert.equal(widest.words, 65_536);
    assert.equal(widest.stride, 1024, 'the widest stride the program follows (MAX_STRIDE)');
    assert.throws(
      () => tableEntries(table(65_536 * 64 + 1)),
      (error: unknown) =>
        // The CLI prints a DataplaneError as one line, without a stack trace.
        error instanceof EbpfError &&
        error instanceof DataplaneError &&
        !error.message.includes('\n') &&
        error.message ===
          "an endpoint's table on this node has 4,194,305 rule slots (65,537 64-bit words per bitmap); the eBPF datapath encodes at most 4,194,304 (65,536 words)",
    );
  });

  it('an address in more than 16 of the node’s groups: its record continues in chunks', () => {
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    const objects: Raw[] = [
      namespace('a'),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'client', Object.fromEntries(keys.map((k) => [k, 'x'])), { ips: ['10.0.0.2'], node: 'n2' }),
      pod('a', 'other', { k39: 'x' }, { ips: ['10.0.0.3'], node: 'n2' }),
      ...keys.map((k, i) =>
        policy('a', `p${i}`, {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { [k]: 'x' } } }], ports: [{ port: 2000 + i }] }],
        }),
      ),
    ];
    const cluster = clusterOf(objects);
    const maps = new FakeMaps();
    nodePipeline('n1', maps).pipeline.apply({ type: 'resync', cluster });
    assert.ok(maps.size('record_groups') >= 2, 'two chunks per side');
    const view = new NodeView(liveContent(readBack(maps)));
    for (let i = 0; i < 40; i++)
      assert.equal(view.side('ingress', ipOf('10.0.0.1'), ipOf('10.0.0.2'), 0, 2000 + i), true, `group ${i}`);
    assert.equal(view.side('ingress', ipOf('10.0.0.1'), ipOf('10.0.0.3'), 0, 2000), false);
    assert.equal(view.side('ingress', ipOf('10.0.0.1'), ipOf('10.0.0.3'), 0, 2039), true);
  });
});
