/**
 * Attribution names a connection once per class of ports and of outside addresses that no policy
 * tells apart (port-classes.ts, address-classes.ts). Held to naming every event afresh: on random
 * clusters with NetworkPolicy, the network-policy-api kinds, Calico's and Cilium's policies and
 * staged policies, with ports and addresses at and beside every boundary, the records are equal
 * (mismatches and their reasons included). And a scan or a sweep is named a handful of times.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  attributeEvent,
  attributeEvents,
  attributionContext,
  type VerdictEvent,
} from '../../src/flows/index.ts';
import { STAGED_ANNOTATION } from '../../src/model/types.ts';
import { formatIp } from '../../src/net/ip.ts';
import { clusterArb, EXTERNAL_IPS } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

// Every port the arbitraries' rules and containers name, and the ones either side of it.
const PORTS = [1, 52, 53, 54, 79, 80, 81, 1233, 1234, 1235, 4999, 5000, 5001, 7999, 8000, 8001];
const MORE_PORTS = [8080, 8081, 8999, 9000, 9001, 9089, 9090, 9091, 65535];
// Addresses at and beside the arbitraries' blocks' edges, outside and inside them.
const ADDRESSES = [
  ...EXTERNAL_IPS,
  '9.255.255.255',
  '10.0.0.0',
  '10.0.0.255',
  '10.0.1.0',
  '10.0.1.255',
  '10.0.2.0',
  '10.0.255.255',
  '10.1.0.0',
  '10.255.255.255',
  '11.0.0.0',
  '192.168.0.255',
  '192.168.1.0',
  '192.168.1.255',
  '192.168.2.0',
  '192.168.100.3',
  '203.0.113.7',
  'fcff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'fd00::',
  'fd00:0:0:1::',
  'fd00:1::',
  'fd01::',
  '2001:db8::',
  '2001:db9::',
];

/** Marks every other NetworkPolicy or admin policy staged, when asked. */
function staging(objects: Raw[], stage: boolean): Raw[] {
  if (!stage) return objects;
  let n = 0;
  return objects.map((object) => {
    const kind = (object as { kind?: string }).kind ?? '';
    if (!['NetworkPolicy', 'AdminNetworkPolicy'].includes(kind) || n++ % 2 === 0) return object;
    const metadata = (object as { metadata?: Record<string, unknown> }).metadata ?? {};
    return { ...object, metadata: { ...metadata, annotations: { [STAGED_ANNOTATION]: 'true' } } };
  });
}

// Each run asks ~110 connections of a fresh context apiece; the direct tests below catch the
// classic breaks (a named port, an except) on their own.
const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 400);

describe('attribution by class', () => {
  it('names every event as naming it afresh would, on random clusters of every engine', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 8, maxPolicies: 3, maxClusterPolicies: 2 }),
        calicoArb(3),
        ciliumArb(2),
        fc.boolean(),
        fc.constantFrom(undefined, 'n1', 'n2'),
        // Each shape is asked on every port, then from and to every address: every two
        // connections a class puts together meet in one run.
        fc.array(
          fc.record({
            src: fc.oneof(fc.nat(7), fc.constantFrom(...ADDRESSES)),
            dst: fc.oneof(fc.nat(7), fc.constantFrom(...ADDRESSES)),
            protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'SCTP' as const),
            port: fc.constantFrom(...PORTS, ...MORE_PORTS),
            verdict: fc.constantFrom('allowed' as const, 'denied' as const),
            deniedBy: fc.constantFrom(undefined, 'egress' as const, 'ingress' as const),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        (objects, calico, cilium, stage, node, shapes) => {
          const cluster = clusterOf(staging([...objects, ...calico, ...cilium], stage));
          const podIps = cluster.endpoints.flatMap((e) => e.ips.map(formatIp));
          const address = (a: number | string): string =>
            typeof a === 'string' ? a : (podIps[a % Math.max(podIps.length, 1)] ?? '10.0.0.1');
          const shared = attributionContext(cluster, node);
          for (const shape of shapes) {
            const event: VerdictEvent = {
              at: 0,
              protocol: shape.protocol,
              src: address(shape.src),
              dst: address(shape.dst),
              port: shape.port,
              verdict: shape.verdict,
              ...(shape.verdict === 'denied' && shape.deniedBy ? { deniedBy: shape.deniedBy } : {}),
            };
            const variants = [
              ...[...PORTS, ...MORE_PORTS].map((port) => ({ ...event, port })),
              ...ADDRESSES.map((src) => ({ ...event, src })),
              ...ADDRESSES.map((dst) => ({ ...event, dst })),
            ];
            for (const variant of variants)
              assert.deepEqual(
                attributeEvent(shared, variant),
                attributeEvent(attributionContext(cluster, node), variant),
                JSON.stringify(variant),
              );
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  const cluster = clusterOf([
    namespace('prod'),
    pod('prod', 'web', { app: 'web' }, { ips: ['10.0.1.1'], node: 'n1' }),
    pod('prod', 'db', { app: 'db' }, { ips: ['10.0.2.1'], node: 'n2' }),
    policy('prod', 'db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [
        { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] },
        { from: [{ ipBlock: { cidr: '203.0.113.0/24' } }], ports: [{ port: 8000, endPort: 8999 }] },
      ],
    }),
  ]);
  const base = { at: 0, protocol: 'TCP' as const, src: '10.0.1.1', dst: '10.0.2.1' };

  it('names a port scan once per class, each record with its own port', () => {
    const context = attributionContext(cluster, 'n2');
    const events: VerdictEvent[] = Array.from({ length: 2000 }, (_, i) => ({
      ...base,
      port: 1 + i * 30,
      verdict: i * 30 + 1 === 5432 ? 'allowed' : 'denied',
      ...(i * 30 + 1 === 5432 ? {} : { deniedBy: 'ingress' as const }),
    }));
    const records = attributeEvents(context, events);
    assert.equal(records.length, 2000);
    assert.deepEqual(
      records.map((r) => r.port),
      events.map((e) => e.port),
    );
    // Below 5432, 5432 itself, 5433–7999, 8000–8999, above: at most five judgements.
    assert.ok(context.memo.size <= 5, `${context.memo.size} judgements`);
    assert.ok(records.every((r) => r.mismatch === undefined));
  });

  it('names a sweep of outside addresses once per class, each record with its own address', () => {
    const context = attributionContext(cluster, 'n2');
    const events: VerdictEvent[] = Array.from({ length: 1024 }, (_, i) => ({
      ...base,
      src: `203.0.${112 + (i >> 8)}.${i & 255}`,
      port: 8080,
      verdict: i >> 8 === 1 ? 'allowed' : 'denied',
      ...(i >> 8 === 1 ? {} : { deniedBy: 'ingress' as const }),
    }));
    const records = attributeEvents(context, events);
    assert.deepEqual(
      records.map((r) => r.src),
      events.map((e) => ({ ip: e.src })),
    );
    // Three classes: below 203.0.113.0/24, the block, above it.
    assert.equal(context.memo.size, 3);
    assert.ok(records.every((r) => r.mismatch === undefined));
    assert.deepEqual(records[300]?.decidedBy, [
      { direction: 'ingress', tier: 'NetworkPolicy', outcome: 'allow', policy: 'prod/db', rule: 1 },
    ]);
  });

  it("parts classes at a named port's number and at an except's edges", () => {
    const named = clusterOf([
      namespace('prod'),
      pod('prod', 'web', { app: 'web' }, { ips: ['10.0.1.1'], node: 'n1' }),
      pod(
        'prod',
        'db',
        { app: 'db' },
        { ips: ['10.0.2.1'], node: 'n2', ports: [{ name: 'pg', containerPort: 6432 }] },
      ),
      policy('prod', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 'pg' }] },
          { from: [{ ipBlock: { cidr: '198.51.100.0/24', except: ['198.51.100.128/25'] } }] },
        ],
      }),
    ]);
    const context = attributionContext(named, 'n2');
    const verdicts = attributeEvents(context, [
      { ...base, port: 6432, verdict: 'allowed' },
      { ...base, port: 6433, verdict: 'allowed' },
      { ...base, src: '198.51.100.127', port: 1, verdict: 'allowed' },
      { ...base, src: '198.51.100.128', port: 1, verdict: 'allowed' },
    ]).map((r) => r.mismatch === undefined);
    assert.deepEqual(verdicts, [true, false, true, false]);
  });

  it('keeps addresses that do not parse apart from classes and from each other', () => {
    // Text no reader writes, but an event from elsewhere may hold: it must not stand for a class
    // (v4#N was one's key) nor, split at a '|', for another connection.
    const context = attributionContext(cluster, 'n2');
    const [garbage, real] = attributeEvents(context, [
      { ...base, src: 'v4#1', port: 8080, verdict: 'allowed' },
      { ...base, src: '203.0.113.5', port: 8080, verdict: 'allowed' },
    ]);
    assert.deepEqual(garbage?.decidedBy, []);
    assert.deepEqual(real?.decidedBy, [
      { direction: 'ingress', tier: 'NetworkPolicy', outcome: 'allow', policy: 'prod/db', rule: 1 },
    ]);
    const split = attributeEvents(attributionContext(cluster, undefined), [
      { ...base, src: 'a|b', dst: 'c', port: 1, verdict: 'allowed' },
      { ...base, src: 'a', dst: 'b|c', port: 1, verdict: 'allowed' },
    ]);
    assert.deepEqual(
      split.map((r) => [r.src.ip, r.dst.ip]),
      [
        ['a|b', 'c'],
        ['a', 'b|c'],
      ],
    );
  });

  it('keeps a judgement that disagrees with the kernel for its own port, with its own reason', () => {
    const context = attributionContext(cluster, 'n2');
    const [first, second] = attributeEvents(context, [
      { ...base, port: 81, verdict: 'allowed' },
      { ...base, port: 82, verdict: 'allowed' },
    ]);
    assert.match(first?.mismatch ?? '', /TCP\/81/);
    assert.match(second?.mismatch ?? '', /TCP\/82/);
  });
});
