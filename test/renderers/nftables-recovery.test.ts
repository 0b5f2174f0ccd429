/**
 * The nftables renderer's transaction logic against the fake nft (no root): random histories
 * across two nodes in two phases are accepted and leave exactly the desired table; and the
 * recovery paths — a rejected transaction, one committed whose answer was lost, nft not
 * answering at all, a table deleted or changed behind the renderer's back, a table left between
 * the two phases by a crash — each end with the kernel holding the desired table after the next
 * commit, and no message claims more than was read back.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { PolicyPipeline, changesBetween } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { NftablesRenderer, NodeFleetRenderer } from '../../src/datapaths/nftables/index.ts';
import { DataplaneError, FakeNft, type FakeTable } from '../../src/dataplane/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

/** Two nodes, each with its fake kernel; the fleet commits in two phases. */
function fleet(families?: readonly (4 | 6)[]) {
  const state = new ClusterState();
  const fakes = new Map([
    ['n1', new FakeNft()],
    ['n2', new FakeNft()],
  ]);
  const renderers = new Map(
    [...fakes].map(([n, fake]) => [
      n,
      new NftablesRenderer({ state, runner: fake, ...(families ? { families } : {}) }),
    ]),
  );
  const pipeline = new PolicyPipeline({ state, renderers: [new NodeFleetRenderer(renderers)] });
  return { state, fakes, renderers, pipeline };
}

/** The table a fresh renderer would write for the same desired state, applied to an empty fake. */
function expectedTable(renderer: NftablesRenderer): FakeTable {
  const fresh = new FakeNft();
  fresh.apply(renderer.fullScript());
  return fresh.table() as FakeTable;
}

/** The fake kernel's table without what changes with every commit (generation and fingerprint). */
function comparable(table: FakeTable | undefined): unknown {
  if (!table) return undefined;
  const sets = [...table.sets].filter(([n]) => n !== 'fingerprint').sort(([a], [b]) => (a < b ? -1 : 1));
  const chains = [...table.chains]
    .filter(([n]) => n !== 'flow_fastpath' && n !== 'flow_stamp')
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const maps = [...table.maps].sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    sets: sets.map(([n, s]) => [n, s.type, [...s.elements].sort()]),
    maps: maps.map(([n, m]) => [n, [...m.entries].sort(([a], [b]) => (a < b ? -1 : 1))]),
    chains: chains.map(([n, c]) => [n, c.rules]),
  };
}

function assertConverged(renderers: Map<string, NftablesRenderer>, fakes: Map<string, FakeNft>): void {
  for (const [node, renderer] of renderers) {
    assert.deepEqual(comparable(fakes.get(node)?.table()), comparable(expectedTable(renderer)), node);
    assert.equal(renderer.pending(), 0, `${node}: nothing left to send`);
  }
}

const base = [
  namespace('shop', { team: 'shop' }),
  pod('shop', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
  pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.2'], node: 'n1' }),
  pod('shop', 'db', { app: 'db' }, { ips: ['10.0.0.3'], node: 'n2' }),
  policy('shop', 'api-from-web', {
    podSelector: { matchLabels: { app: 'api' } },
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 80 }] }],
  }),
];
const changed = [
  ...base.slice(0, 4),
  policy('shop', 'api-from-web', {
    podSelector: { matchLabels: { app: 'api' } },
    ingress: [{ ports: [{ port: 8080 }] }],
  }),
  policy('shop', 'db-isolated', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] }),
];

describe('nftables transactions against the fake nft', () => {
  it('random histories across two nodes in two phases: every transaction accepted, the kernel ends as desired', () => {
    fc.assert(
      fc.property(
        fc.array(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 3 }), {
          minLength: 2,
          maxLength: 5,
        }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        (history, verifyBetween) => {
          const { fakes, renderers, pipeline } = fleet();
          let previous: Cluster | undefined;
          for (const [i, objects] of history.entries()) {
            const cluster = clusterOf(objects);
            if (previous) pipeline.applyBatch(changesBetween(previous, cluster));
            else pipeline.apply({ type: 'resync', cluster });
            previous = cluster;
            // What the lab does before each apply: check the fingerprint (it matches: no reading
            // back); or what a new process does: read the whole table back (every name dirty, in
            // the kernel's order, so deletions must not depend on the order changes were noticed).
            if (verifyBetween[i]) for (const r of renderers.values()) assert.equal(r.verify(), true);
            else for (const r of renderers.values()) assert.equal(r.attach(), 0);
            assertConverged(renderers, fakes);
          }
        },
      ),
      { numRuns: Math.max(10, Math.ceil(RUNS / 3)), seed: 11 },
    );
  });

  it('IPv4-only nodes have no IPv6 set, map or rule', () => {
    const { fakes, pipeline } = fleet([4]);
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    const table = fakes.get('n1')?.table();
    assert.ok(table);
    const names = [...table.sets.keys(), ...table.maps.keys()];
    assert.deepEqual(
      names.filter((n) => n.endsWith('_6')),
      [],
    );
    for (const chain of table.chains.values()) assert.ok(chain.rules.every((r) => !r.includes('ip6')));
  });

  it('an answer lost after the commit: read back, found committed, carried on as done', () => {
    const { fakes, renderers, pipeline } = fleet();
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    fakes.get('n1')?.inject('lost');
    pipeline.applyBatch(changesBetween(clusterOf(base), clusterOf(changed)));
    assertConverged(renderers, fakes);
  });

  it('a rejected phase on one node: the error says what was read back, and the next commit converges', () => {
    const { fakes, renderers, pipeline } = fleet();
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    const n1Before = comparable(fakes.get('n1')?.table());
    // n1's second phase fails after both nodes restricted.
    fakes.get('n1')?.inject('pass', 'reject');
    fakes.get('n1')?.applied.splice(0);
    assert.throws(
      () => pipeline.applyBatch(changesBetween(clusterOf(base), clusterOf(changed))),
      (error: Error) =>
        error instanceof DataplaneError &&
        /read back from the kernel: the table is as it was before this transaction/.test(error.message),
    );
    assert.notDeepEqual(n1Before, comparable(fakes.get('n1')?.table()), 'phase one was committed on n1');
    pipeline.applyBatch([]);
    assertConverged(renderers, fakes);
  });

  it('nft not answering: nothing is claimed, and once it answers the whole table is replaced', () => {
    const { fakes, renderers, pipeline } = fleet();
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    const n2 = fakes.get('n2') as FakeNft;
    n2.unreachable = true;
    assert.throws(
      () => pipeline.applyBatch(changesBetween(clusterOf(base), clusterOf(changed))),
      (error: Error) =>
        error instanceof DataplaneError &&
        error.uncertain &&
        /could not be read back/.test(error.message) &&
        !/as it was before/.test(error.message),
    );
    n2.unreachable = false;
    assert.equal(renderers.get('n2')?.pending(), 'replace');
    pipeline.applyBatch([]);
    assertConverged(renderers, fakes);
  });

  it('drift: a table deleted or edited behind the renderer is found by its fingerprint and repaired', () => {
    const { fakes, renderers, pipeline } = fleet();
    pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    const n1 = fakes.get('n1') as FakeNft;
    const renderer = renderers.get('n1') as NftablesRenderer;
    assert.equal(renderer.verify(), true);
    n1.apply('delete table inet palisade\n');
    assert.equal(renderer.verify(), false);
    assert.equal(renderer.pending(), 'replace');
    pipeline.applyBatch([]);
    assertConverged(renderers, fakes);
    // Another writer (the fingerprint moves) removed a dispatch entry: read back, put back.
    const fingerprint = [...(n1.table()?.sets.get('fingerprint')?.elements ?? [])][0];
    n1.apply(
      `delete element inet palisade in_4 { 10.0.0.2 }\ndelete element inet palisade fingerprint { ${fingerprint} }\nadd element inet palisade fingerprint { 1 . 1 }\n`,
    );
    assert.equal(renderer.verify(), false);
    assert.equal(renderer.pending(), 1);
    pipeline.applyBatch([]);
    assertConverged(renderers, fakes);
  });

  it('attaching to a table left between the two phases (a crash) plans from it and converges', () => {
    const first = fleet();
    first.pipeline.apply({ type: 'resync', cluster: clusterOf(base) });
    // The process dies after phase one: both nodes hold intersection chains.
    for (const renderer of first.renderers.values()) renderer.pause();
    first.pipeline.applyBatch(changesBetween(clusterOf(base), clusterOf(changed)));
    for (const renderer of first.renderers.values()) {
      (renderer as unknown as { paused: boolean }).paused = false;
      renderer.commitRestrict();
    }
    assert.ok([...(first.fakes.get('n1')?.table()?.chains.keys() ?? [])].some((c) => c.startsWith('x_')));
    // A new process: desired = the new policy, kernels read back.
    const second = fleet();
    second.fakes.clear();
    for (const [node, fake] of first.fakes) second.fakes.set(node, fake);
    const renderers = new Map(
      [...first.fakes].map(([node, fake]) => [
        node,
        new NftablesRenderer({ state: second.state, runner: fake }),
      ]),
    );
    for (const r of renderers.values()) r.pause();
    const pipeline = new PolicyPipeline({
      state: second.state,
      renderers: [new NodeFleetRenderer(renderers)],
    });
    pipeline.apply({ type: 'resync', cluster: clusterOf(changed) });
    const pending = new Map([...renderers].map(([node, r]) => [node, r.attach()]));
    assert.notEqual(pending.get('n1'), 0, 'n1 holds an intersection, not the new table');
    pipeline.applyBatch([]);
    assertConverged(renderers, first.fakes);
    assert.ok([...(first.fakes.get('n1')?.table()?.chains.keys() ?? [])].every((c) => !c.startsWith('x_')));
  });
});

describe('the fake nft', () => {
  it('commits all or nothing, and refuses what the kernel refuses', () => {
    const fake = new FakeNft();
    fake.apply(
      'table inet t {}\nadd chain inet t c\nadd set inet t s { type ipv4_addr; }\nadd rule inet t c ip saddr @s return\n',
    );
    assert.throws(() => fake.apply('add element inet t s { 10.0.0.1 }\ndelete set inet t s\n'), /busy/);
    assert.deepEqual(
      [...(fake.table('inet t')?.sets.get('s')?.elements ?? [])],
      [],
      'nothing of it committed',
    );
    assert.throws(() => fake.apply('delete element inet t s { 10.0.0.9 }\n'), /No such file/);
    assert.throws(() => fake.apply('add rule inet t c goto nowhere\n'), /No such file/);
    assert.equal(fake.query('list set inet t nosuch'), undefined);
    assert.equal(fake.query('list table inet nosuch'), undefined);
  });
});
