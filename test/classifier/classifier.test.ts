/**
 * The classifier's verdicts equal the reference evaluator's for every packet between pods,
 * nodes and outside addresses on random clusters (IPv4 and IPv6, named ports both ways, port
 * ranges, ipBlocks with except), and stay right with more than 32 and 64 rule slots on one
 * endpoint (multi-word bitmaps).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Classifier, type ClassifierPacket } from '../../src/classifier/index.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import type { Cluster } from '../../src/model/types.ts';
import { ClusterState } from '../../src/state/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function classifierOf(cluster: Cluster): Classifier {
  const state = new ClusterState();
  state.resync(cluster);
  const classifier = new Classifier(state);
  for (const node of cluster.nodes.values()) classifier.addNodeAddresses(node.name, node.addresses);
  return classifier;
}

describe('classifier', () => {
  it('≡ reference evaluator on random clusters', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 5 }), (objects) => {
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
