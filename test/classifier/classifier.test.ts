/**
 * The classifier's verdicts equal the reference evaluator's for every packet between pods,
 * nodes and outside addresses on random clusters (IPv4 and IPv6, named ports both ways, port
 * ranges, ipBlocks with except), and stay right with more than 32 and 64 rule slots on one
 * endpoint (multi-word bitmaps).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Classifier, TrackedClassifier, type ClassifierPacket } from '../../src/classifier/index.ts';
import { ClassifierRenderer } from '../../src/datapaths/bitmap/index.ts';
import { PolicyPipeline, changesBetween } from '../../src/pipeline/index.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import type { Cluster } from '../../src/model/types.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function classifierOf(cluster: Cluster): Classifier {
  const state = new ClusterState();
  state.resync(cluster);
  const classifier = new Classifier(state, { tiers: true });
  for (const node of cluster.nodes.values()) classifier.addNodeAddresses(node.name, node.addresses);
  return classifier;
}

describe('classifier', () => {
  it('≡ reference evaluator on random clusters, with tiered cluster policies', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 5, maxClusterPolicies: 4 }), (objects) => {
        const cluster = clusterOf(objects);
        const classifier = classifierOf(cluster);
        assertAgreesWithReference(
          cluster,
          (packet) => {
            const verdict = classifier.allows(packet);
            // The numeric IPv4 path must say the same.
            if (packet.src.family === 4 && packet.dst.family === 4)
              assert.equal(
                classifier.allowsV4(
                  Number(packet.src.value),
                  Number(packet.dst.value),
                  packet.protocol,
                  packet.port,
                ),
                verdict,
              );
            return verdict;
          },
          'classifier: ',
        );
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps a peer of one rule from combining with a port of another rule of the same policy', () => {
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.1'] }),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.2'] }),
      pod('a', 'ops', { app: 'ops' }, { ips: ['10.0.0.3'] }),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] },
          { from: [{ podSelector: { matchLabels: { app: 'ops' } } }], ports: [{ port: 22 }] },
        ],
      }),
    ]);
    assertAgreesWithReference(cluster, (packet) => classifierOf(cluster).allows(packet));
  });

  for (const count of [33, 70, 130]) {
    it(`is exact with ${count} policies selecting one endpoint (${Math.ceil(count / 32)}-word bitmaps)`, () => {
      const objects = [namespace('a'), pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.1'] })];
      for (let i = 0; i < count; i++) {
        objects.push(
          pod('a', `c${i}`, { app: `c${i}` }, { ips: [`10.1.${Math.floor(i / 200)}.${(i % 200) + 1}`] }),
        );
        objects.push(
          policy('a', `p${i}`, {
            podSelector: { matchLabels: { app: 'db' } },
            ingress: [
              { from: [{ podSelector: { matchLabels: { app: `c${i}` } } }], ports: [{ port: 1000 + i }] },
            ],
          }),
        );
      }
      const cluster = clusterOf(objects);
      const classifier = classifierOf(cluster);
      const db = cluster.endpoints.find((e) => e.id === 'a/db');
      assert.ok(db);
      const dbIp = db.ips[0] as IpAddress;
      const table = classifier.mapsOf(dbIp)?.ingress;
      assert.equal(table?.width, Math.ceil(count / 32));
      for (let i = 0; i < count; i++) {
        const client = cluster.endpoints.find((e) => e.id === `a/c${i}`);
        assert.ok(client);
        const packet = (port: number): ClassifierPacket => ({
          src: client.ips[0] as IpAddress,
          dst: dbIp,
          protocol: 'TCP',
          port,
        });
        assert.equal(classifier.allows(packet(1000 + i)), true, `c${i} on its own port`);
        assert.equal(
          classifier.allows(packet(1000 + ((i + 1) % count))),
          count === 1,
          `c${i} on another client's port`,
        );
      }
    });
  }
});

describe('classifier connection tracking', () => {
  const objects = (extra: Raw[] = []): Raw[] => [
    namespace('a'),
    pod('a', 'client', { app: 'client' }, { ips: ['10.0.0.1'] }),
    pod('a', 'server', { app: 'server' }, { ips: ['10.0.0.2'] }),
    policy('a', 'client-isolated', {
      podSelector: { matchLabels: { app: 'client' } },
      policyTypes: ['Ingress'],
    }),
    ...extra,
  ];
  const C = (10 << 24) | 1;
  const S = (10 << 24) | 2;
  const request = { src: C, dst: S, protocol: 'TCP' as const, srcPort: 40000, dstPort: 80 };
  const reply = { src: S, dst: C, protocol: 'TCP' as const, srcPort: 80, dstPort: 40000 };

  it('passes replies of an allowed connection where the reverse direction is denied', () => {
    const tracked = new TrackedClassifier(classifierOf(clusterOf(objects())));
    assert.equal(tracked.packet(reply), false, 'the server cannot open a connection to the client');
    const fresh = new TrackedClassifier(classifierOf(clusterOf(objects())));
    assert.equal(fresh.packet(request), true);
    assert.equal(fresh.packet(reply), true, 'the reply passes');
  });

  it('cuts a connection at its next packet, either direction, once an update denies it', () => {
    const tracked = new TrackedClassifier(classifierOf(clusterOf(objects())));
    assert.equal(tracked.packet(request), true);
    const denied = objects([
      policy('a', 'server-isolated', {
        podSelector: { matchLabels: { app: 'server' } },
        policyTypes: ['Ingress'],
      }),
    ]);
    tracked.update(classifierOf(clusterOf(denied)));
    assert.equal(tracked.packet(reply), false, 'the reply is judged as the original connection');
    assert.equal(tracked.packet(request), false);
    tracked.update(classifierOf(clusterOf(objects())));
    assert.equal(tracked.packet(request), true, 'allowed again after the policy goes');
  });

  it('stays within its capacity, evicting the least recently used', () => {
    const tracked = new TrackedClassifier(classifierOf(clusterOf(objects())), 100);
    for (let port = 0; port < 1000; port++) tracked.packet({ ...request, srcPort: 10000 + port });
    assert.equal(tracked.size, 100);
  });
});

describe('classifier kept current by the pipeline', () => {
  it('after every batch of random events equals the reference for the cluster it has reached (tiered policies and nodes too)', () => {
    fc.assert(
      fc.property(
        fc.array(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 3 }), {
          minLength: 2,
          maxLength: 4,
        }),
        (steps) => {
          const state = new ClusterState();
          const renderer = new ClassifierRenderer(state, { tiers: true });
          const pipeline = new PolicyPipeline({ state, renderers: [renderer] });
          let previous: Cluster | undefined;
          for (const objects of steps) {
            const cluster = clusterOf(objects);
            if (previous) pipeline.applyBatch(changesBetween(previous, cluster));
            else pipeline.apply({ type: 'resync', cluster });
            for (const node of cluster.nodes.values())
              renderer.classifier.addNodeAddresses(node.name, node.addresses);
            assertAgreesWithReference(
              cluster,
              (packet) => renderer.classifier.allows(packet),
              'incremental: ',
            );
            previous = cluster;
          }
        },
      ),
      { numRuns: Math.max(10, Math.ceil(RUNS / 3)) },
    );
  });

  it('stays exact while policy churn compacts the packed tables under it', () => {
    // Each round changes half the policies' ports: their tables are rebuilt and the old ones
    // become garbage, so the arena compacts, moving the other tables' blocks (240 rounds: the
    // one-word blocks are smaller than the blocks this was written for, and 120 no longer filled
    // the arena).
    const round = (r: number) =>
      clusterOf([
        namespace('a'),
        ...Array.from({ length: 12 }, (_, i) =>
          pod('a', `p${i}`, { app: `p${i}` }, { ips: [`10.0.0.${i + 1}`] }),
        ),
        ...Array.from({ length: 12 }, (_, i) =>
          policy('a', `to-p${i}`, {
            podSelector: { matchLabels: { app: `p${i}` } },
            ingress: [
              {
                from: [{ podSelector: { matchLabels: { app: `p${(i + 1) % 12}` } } }],
                // Half the pods' policies change every round; the other half's never do, so
                // their blocks are moved by compactions and their records must follow.
                ports: Array.from({ length: 12 }, (_, k) => ({ port: 1000 + (i % 2 ? r : 0) * 20 + k })),
              },
            ],
          }),
        ),
      ]);
    const state = new ClusterState();
    const renderer = new ClassifierRenderer(state);
    const pipeline = new PolicyPipeline({ state, renderers: [renderer] });
    let previous = round(0);
    pipeline.apply({ type: 'resync', cluster: previous });
    const rounds = 240;
    for (let r = 1; r <= rounds; r++) {
      const compactions = renderer.classifier.compactions;
      const next = round(r);
      pipeline.applyBatch(changesBetween(previous, next));
      previous = next;
      if (r % 30 === 0 || renderer.classifier.compactions > compactions)
        assertAgreesWithReference(next, (packet) => renderer.classifier.allows(packet), `round ${r}: `);
    }
    assert.ok(renderer.classifier.compactions > 0, 'the packed tables were compacted');
    const pods = previous.endpoints;
    // The ports of the last round, which the sample ports of assertAgreesWithReference miss.
    for (const dst of pods)
      for (const src of pods) {
        const i = Number(dst.id.slice(3));
        const allowed = src.id === `a/p${(i + 1) % 12}`;
        assert.equal(
          renderer.classifier.allows({
            src: src.ips[0] as IpAddress,
            dst: dst.ips[0] as IpAddress,
            protocol: 'TCP',
            port: 1000 + (i % 2 ? rounds : 0) * 20 + (i % 12),
          }),
          allowed,
          `${src.id} → ${dst.id}`,
        );
      }
  });

  it('answers with the old policy until a transaction commits, and with the new one after', () => {
    const base = [
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'] }),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'] }),
    ];
    const before = clusterOf(base);
    const after = clusterOf([
      ...base,
      policy('a', 'deny-db', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] }),
    ]);
    const state = new ClusterState();
    const renderer = new ClassifierRenderer(state);
    new PolicyPipeline({ state, renderers: [renderer] }).apply({ type: 'resync', cluster: before });
    const web = before.endpoints.find((e) => e.id === 'a/web')?.ips[0] as IpAddress;
    const db = before.endpoints.find((e) => e.id === 'a/db')?.ips[0] as IpAddress;
    const packet: ClassifierPacket = { src: web, dst: db, protocol: 'TCP', port: 80 };
    // Drive one transaction by hand: the store changes first, the maps only at commit.
    const txn = renderer.newTxn({ resync: false });
    for (const change of changesBetween(before, after))
      if (change.type === 'upsert-policy') state.upsertPolicy(change.policy);
    txn.render({ id: 'a/db', ips: [db] }, undefined);
    assert.equal(renderer.classifier.allows(packet), true, 'before commit: the old policy');
    txn.commit();
    assert.equal(renderer.classifier.allows(packet), false, 'after commit: the new policy');
  });

  it('rebuilds shared maps when a group they expand gains a member', () => {
    const base = [
      namespace('a'),
      pod('a', 'db-0', { app: 'db' }, { ips: ['10.0.0.1'] }),
      pod('a', 'db-1', { app: 'db' }, { ips: ['10.0.0.2'] }),
      pod('a', 'web-0', { app: 'web' }, { ips: ['10.0.0.3'] }),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
      }),
    ];
    const before = clusterOf(base);
    const after = clusterOf([...base, pod('a', 'web-1', { app: 'web' }, { ips: ['10.0.0.4'] })]);
    const state = new ClusterState();
    const renderer = new ClassifierRenderer(state);
    const pipeline = new PolicyPipeline({ state, renderers: [renderer] });
    pipeline.apply({ type: 'resync', cluster: before });
    pipeline.applyBatch(changesBetween(before, after));
    assertAgreesWithReference(after, (packet) => renderer.classifier.allows(packet));
  });
});
