/**
 * The VPPTCP renderer: session rules, interpreted with the session layer's longest-prefix match
 * (local table of the source's namespace; the receiving node's global table unless both pods
 * share a node), give the reference evaluator's verdict for every TCP and UDP packet between
 * pods, nodes and outside addresses, IPv4 and IPv6, several nodes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  localAllows,
  sessionTransaction,
  SCOPE_GLOBAL,
  SCOPE_LOCAL,
  ACTION_ALLOW,
  ACTION_DENY,
  type SessionRule,
} from '../../src/datapaths/vpptcp/index.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { sessionRulesPerNode, vpptcpVerdicts } from '../helpers/renderer-verdicts.ts';
import { clusterOf, namespace, pod, policy, ipOf } from '../helpers/builders.ts';
import { podAndOwnNode, probeAddresses, referenceAllows } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
describe('VPPTCP renderer', () => {
  const agreesOnRandomClusters = (options: Parameters<typeof clusterArb>[0]) =>
    fc.assert(
      fc.property(clusterArb(options), (objects) => {
        const cluster = clusterOf(objects);
        const allows = vpptcpVerdicts(cluster);
        const addresses = probeAddresses(cluster);
        const ownNode = podAndOwnNode(cluster);
        for (const src of addresses)
          for (const dst of addresses) {
            if (src.ip.family !== dst.ip.family || ownNode(src.ip, dst.ip)) continue;
            for (const [port, protocol] of SAMPLE_PORTS) {
              if (protocol === 'SCTP') continue; // not handled by the session layer (reported)
              const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
              const actual = allows({ src: src.ip, dst: dst.ip, protocol, port });
              assert.equal(actual, expected, `${src.label} → ${dst.label} ${protocol}/${port}`);
            }
          }
      }),
      { numRuns: RUNS },
    );

  it('session rules ≡ reference evaluator on random clusters (TCP and UDP)', () => {
    agreesOnRandomClusters({ maxPods: 7, maxPolicies: 4 });
  });

  it('with ordered cluster policy: Admin rules, Pass and Baseline in longest-prefix-match entries', () => {
    // Traffic between a pod and its own node is not policed by VPP (see renderer-verdicts.ts).
    agreesOnRandomClusters({ maxPods: 6, maxPolicies: 3, maxClusterPolicies: 3 });
  });

  it('lets the most specific rule win: a /32 deny on any port beats a /8 permit on the port', () => {
    const rule = (rmt: string, port: number, allow: boolean): SessionRule => ({
      transport_proto: 6,
      is_ip4: true,
      lcl: '0.0.0.0/0',
      rmt,
      lcl_port: 0,
      rmt_port: port,
      action_index: allow ? ACTION_ALLOW : ACTION_DENY,
      appns_index: 1,
      scope: SCOPE_LOCAL,
      tag: 't',
    });
    const rules = [rule('10.0.0.0/8', 80, true), rule('10.0.0.5/32', 0, false)];
    const packet = (dst: string) => ({
      src: ipOf('10.1.1.1'),
      dst: ipOf(dst),
      protocol: 'TCP' as const,
      port: 80,
    });
    assert.equal(localAllows(rules, 1, packet('10.0.0.5')), false);
    assert.equal(localAllows(rules, 1, packet('10.0.0.6')), true);
  });

  it('gives each pod its application namespace and local scope, the node one global table, and minimal changes', () => {
    const objects = [
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1' }),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }],
      }),
    ];
    const before = sessionRulesPerNode(clusterOf(objects)).get('n1');
    assert.ok(before);
    assert.deepEqual(before.namespaces, [
      { pod: 'a/db', appns_index: 1 },
      { pod: 'a/web', appns_index: 2 },
    ]);
    const global = before.rules.filter(
      (r) => r.scope === SCOPE_GLOBAL && r.lcl === '10.0.0.2/32' && r.lcl_port === 5432,
    );
    assert.deepEqual(
      global.map((r) => [r.rmt, r.transport_proto]),
      [['10.0.0.1/32', 6]],
    );
    const widened = [
      ...objects.slice(0, 3),
      policy('a', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ ports: [{ port: 5432 }] }],
      }),
    ];
    const after = sessionRulesPerNode(clusterOf(widened)).get('n1');
    assert.ok(after);
    const txn = sessionTransaction(before.rules, after.rules);
    assert.ok(txn.add.length > 0 && txn.add.length < after.rules.length);
    assert.ok(txn.delete.length > 0 && txn.delete.length < before.rules.length);
  });

  it("keeps one local pod's host rule from removing that host from another local pod's group rules", () => {
    // The global table holds both servers' ingress rules: a's admits 10.0.0.1 by an ipBlock /32,
    // b's by a pod selector. The host rule decides 10.0.0.1 for a only.
    const cluster = clusterOf([
      namespace('s'),
      pod('s', 'client', { app: 'client' }, { ips: ['10.0.0.1'], node: 'n2' }),
      pod('s', 'a', { app: 'a' }, { ips: ['10.0.1.1'], node: 'n1' }),
      pod('s', 'b', { app: 'b' }, { ips: ['10.0.1.2'], node: 'n1' }),
      policy('s', 'a-in', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.1/32' } }] }],
      }),
      policy('s', 'b-in', {
        podSelector: { matchLabels: { app: 'b' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }],
      }),
    ]);
    const packet = { src: ipOf('10.0.0.1'), dst: ipOf('10.0.1.2'), protocol: 'TCP' as const, port: 80 };
    assert.equal(referenceAllows(cluster, packet.src, packet.dst, 'TCP', 80), true);
    assert.equal(vpptcpVerdicts(cluster)(packet), true);
  });
});
