/**
 * The VPP ACL renderer: the ligato ACLs it renders, interpreted as VPP's ACL plugin matches
 * them along the vswitch path, give the reference evaluator's verdict for every packet between
 * pods, nodes and outside addresses (IPv4 and IPv6, several nodes); SCTP with ports, which VPP
 * ACL rules cannot match, is never allowed where the reference denies it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  aclTransaction,
  interfaceAllows,
  podInterface,
  ReflectionSessions,
} from '../../src/datapaths/vpp-acl/index.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { aclsPerNode, vppAclVerdicts } from '../helpers/renderer-verdicts.ts';
import { clusterOf, namespace, pod, policy, ipOf } from '../helpers/builders.ts';
import { podAndOwnNode, probeAddresses, referenceAllows } from '../helpers/compiled.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
describe('VPP ACL renderer', () => {
  const agreesOnRandomClusters = (options: Parameters<typeof clusterArb>[0]) =>
    fc.assert(
      fc.property(clusterArb(options), (objects) => {
        const cluster = clusterOf(objects);
        const allows = vppAclVerdicts(cluster);
        const addresses = probeAddresses(cluster);
        const ownNode = podAndOwnNode(cluster);
        for (const src of addresses)
          for (const dst of addresses) {
            if (src.ip.family !== dst.ip.family || ownNode(src.ip, dst.ip)) continue;
            for (const [port, protocol] of SAMPLE_PORTS) {
              const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
              const actual = allows({ src: src.ip, dst: dst.ip, protocol, port });
              const where = `${src.label} → ${dst.label} ${protocol}/${port}`;
              if (protocol === 'SCTP') assert.ok(!actual || expected, where);
              else assert.equal(actual, expected, where);
            }
          }
      }),
      { numRuns: RUNS },
    );

  it('rendered ACLs ≡ reference evaluator on random clusters (SCTP with ports: never more)', () => {
    agreesOnRandomClusters({ maxPods: 7, maxPolicies: 4 });
  });

  it('with ordered cluster policy: Admin rules, Pass and Baseline as one ordered list per pod', () => {
    // Traffic between a pod and its own node is not policed by VPP (see renderer-verdicts.ts).
    agreesOnRandomClusters({ maxPods: 6, maxPolicies: 3, maxClusterPolicies: 3 });
  });

  it("keeps a same-node source's egress denial even when the destination allows its exact address", () => {
    // The destination admits the source's address by an ipBlock /32; the source may send nothing.
    // CombineRules' deny for that address must not sort behind the destination's own permit.
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1' }),
      policy('a', 'db-in', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ port: 80 }] }],
      }),
      policy('a', 'web-out', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Egress'] }),
    ]);
    const packet = { src: ipOf('10.0.0.1'), dst: ipOf('10.0.0.2'), protocol: 'TCP' as const, port: 80 };
    assert.equal(referenceAllows(cluster, packet.src, packet.dst, 'TCP', 80), false);
    assert.equal(vppAclVerdicts(cluster)(packet), false);
  });

  it('shares one ACL between pods with equal tables, reflects on every pod, and sends only changed ACLs', () => {
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
      ...['x', 'y', 'z'].map((name, i) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'a', labels: { app: name === 'z' ? 'db' : 'web' } },
        spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
        status: { phase: 'Running', podIP: `10.0.0.${i + 1}` },
      })),
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'db', namespace: 'a' },
        spec: {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }],
        },
      },
    ];
    const before = aclsPerNode(clusterOf(objects)).get('n1') ?? [];
    const local = before.filter((a) => a.name.startsWith('local-'));
    assert.equal(local.length, 2, 'web pods share one ACL, db has its own');
    assert.deepEqual(local.find((a) => a.interfaces.egress.length === 2)?.interfaces.egress, [
      'tap-a-x',
      'tap-a-y',
    ]);
    const db = local.find((a) => a.interfaces.egress.includes('tap-a-z'));
    assert.deepEqual(
      db?.rules
        .filter((r) => r.action === 'PERMIT')
        .map((r) => [r.ip_rule.ip.source_network, r.ip_rule.tcp?.destination_port_range]),
      [
        ['10.0.0.1/32', { lower_port: 5432, upper_port: 5432 }],
        ['10.0.0.2/32', { lower_port: 5432, upper_port: 5432 }],
      ],
      'the group expands to one rule per member address',
    );
    assert.deepEqual(before.find((a) => a.name === 'REFLECTION')?.interfaces.ingress, [
      'tap-a-x',
      'tap-a-y',
      'tap-a-z',
    ]);
    // Relabel z: only the ACLs whose rules or interfaces change are sent.
    const relabelled = objects.map((o) =>
      o.metadata.name === 'z' ? { ...o, metadata: { ...o.metadata, labels: { app: 'web' } } } : o,
    );
    const after = aclsPerNode(clusterOf(relabelled)).get('n1') ?? [];
    const txn = aclTransaction(before, after);
    assert.ok(txn.update.length > 0 && txn.update.length < after.length, 'only changed ACLs are updated');
    assert.equal(txn.add.length, 0);
    assert.ok(txn.delete.includes(db?.name ?? ''));
  });

  it('lets replies back through the reflection session where the client pod denies all ingress', () => {
    const objects = [
      namespace('a'),
      pod('a', 'client', { app: 'client' }, { ips: ['10.0.0.1'], node: 'n1' }),
      pod('a', 'server', { app: 'server' }, { ips: ['10.0.0.2'], node: 'n1' }),
      policy('a', 'client-isolated', {
        podSelector: { matchLabels: { app: 'client' } },
        policyTypes: ['Ingress'],
      }),
    ];
    const acls = aclsPerNode(clusterOf(objects)).get('n1') ?? [];
    const client = ipOf('10.0.0.1');
    const server = ipOf('10.0.0.2');
    const packet = { src: client, dst: server, protocol: 'TCP' as const, port: 80 };
    const sessions = new ReflectionSessions();
    const reply = { server, client, protocol: 'TCP' as const, port: 80 };
    assert.equal(
      sessions.replyAllowed(acls, podInterface('a/client'), reply),
      false,
      'no session yet: the client ACL denies',
    );
    assert.equal(
      interfaceAllows(acls, podInterface('a/server'), 'egress', packet),
      true,
      'the server accepts',
    );
    assert.equal(
      sessions.leavePod(acls, podInterface('a/client'), packet),
      true,
      'the reflective ACL opens a session',
    );
    assert.equal(sessions.replyAllowed(acls, podInterface('a/client'), reply), true, 'the reply passes');
  });
});
