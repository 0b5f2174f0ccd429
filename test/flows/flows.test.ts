/**
 * The flows layer: a kernel's verdict event named by the reference evaluator (the rule `check`
 * names, only the sides the reporting node judged, a disagreement with the kernel flagged),
 * bounded aggregation with evictions counted, and filters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  attributeEvent,
  attributeEvents,
  attributionContext,
  FlowTable,
  flowText,
  matchesFlow,
  parseFlowFilter,
  type FlowRecord,
  type VerdictEvent,
} from '../../src/flows/index.ts';
import { clusterOf, namespace, pod, policy, verdict } from '../helpers/builders.ts';

const cluster = clusterOf([
  namespace('prod', { team: 'shop' }),
  pod('prod', 'web', { app: 'web' }, { ips: ['10.0.1.1'], node: 'n1' }),
  pod('prod', 'db', { app: 'db' }, { ips: ['10.0.2.1'], node: 'n2' }),
  policy('prod', 'db-ingress', {
    podSelector: { matchLabels: { app: 'db' } },
    ingress: [
      { from: [{ podSelector: { matchLabels: { app: 'cache' } } }] },
      { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] },
    ],
  }),
]);

const event = (
  port: number,
  verdict: VerdictEvent['verdict'],
  extra: Partial<VerdictEvent> = {},
): VerdictEvent => ({
  at: Date.parse('2026-01-01T00:00:00Z'),
  protocol: 'TCP',
  src: '10.0.1.1',
  dst: '10.0.2.1',
  srcPort: 40000,
  port,
  verdict,
  ...extra,
});

describe('attributeEvent', () => {
  it('names the rule check names, for each side', () => {
    const record = attributeEvent(attributionContext(cluster, undefined), event(5432, 'allowed'));
    assert.equal(record.src.pod, 'prod/web');
    assert.deepEqual(record.dst.labels, { app: 'db' });
    assert.deepEqual(record.dst.namespaceLabels, { team: 'shop', 'kubernetes.io/metadata.name': 'prod' });
    assert.deepEqual(record.decidedBy, [
      { direction: 'egress', tier: 'NetworkPolicy', outcome: 'not-isolated' },
      { direction: 'ingress', tier: 'NetworkPolicy', outcome: 'allow', policy: 'prod/db-ingress', rule: 1 },
    ]);
    const checked = verdict(cluster, 'prod/web', 'prod/db', 5432).ingress.walk.find(
      (s) => s.outcome === 'allow',
    );
    assert.equal(checked?.policy, 'prod/db-ingress');
    assert.equal(checked?.rule, 1);
    assert.equal(record.mismatch, undefined);
    assert.match(
      flowText(record),
      /^ALLOWED prod\/web -> prod\/db TCP\/5432 ×1 +egress: not isolated; ingress: allowed by prod\/db-ingress ingress\[1\]$/,
    );
  });

  it('names only the sides the reporting node judged', () => {
    const onSource = attributeEvent(attributionContext(cluster, 'n1'), event(80, 'allowed'));
    assert.deepEqual(
      onSource.decidedBy.map((d) => d.direction),
      ['egress'],
    );
    assert.equal(onSource.node, 'n1');
    const onDestination = attributeEvent(
      attributionContext(cluster, 'n2'),
      event(80, 'denied', { deniedBy: 'ingress' }),
    );
    assert.deepEqual(onDestination.decidedBy, [
      { direction: 'ingress', tier: 'NetworkPolicy', outcome: 'deny', isolatedBy: ['prod/db-ingress'] },
    ]);
    assert.match(flowText(onDestination), /ingress: isolated by prod\/db-ingress, no rule allows it$/);
    assert.equal(onDestination.mismatch, undefined);
  });

  it('flags a kernel verdict the evaluator does not give', () => {
    const context = attributionContext(cluster, 'n2');
    assert.match(
      attributeEvent(context, event(80, 'allowed')).mismatch ?? '',
      /evaluator denies it on ingress/,
    );
    assert.match(attributeEvent(context, event(5432, 'denied')).mismatch ?? '', /evaluator allows it/);
    assert.match(
      attributeEvent(attributionContext(cluster, undefined), event(80, 'denied', { deniedBy: 'egress' }))
        .mismatch ?? '',
      /dropped it on egress; the reference evaluator denies it on ingress/,
    );
  });

  it('keeps an address no pod holds as an address, and counts what an event stands for', () => {
    const record = attributeEvent(
      attributionContext(cluster, undefined),
      event(443, 'allowed', { dst: '192.0.2.9', weight: 8, sampled: true }),
    );
    assert.deepEqual(record.dst, { ip: '192.0.2.9' });
    assert.equal(record.count, 8);
    assert.equal(record.sampled, true);
    // Counted in the kernel, not sampled: exact.
    const counted = attributeEvent(
      attributionContext(cluster, undefined),
      event(443, 'allowed', { weight: 8, firstAt: Date.parse('2025-12-31T23:59:00Z') }),
    );
    assert.equal(counted.count, 8);
    assert.equal(counted.sampled, undefined);
    assert.equal(counted.firstSeen, '2025-12-31T23:59:00.000Z');
    assert.equal(counted.lastSeen, '2026-01-01T00:00:00.000Z');
    assert.deepEqual(record.decidedBy, [
      { direction: 'egress', tier: 'NetworkPolicy', outcome: 'not-isolated' },
    ]);
  });
});

describe('attributeEvents (a batch from a busy node)', () => {
  it('equals its events named one by one, one record per connection, each judged once', () => {
    // Seeded: ports, verdicts, sides, weights, times and source ports mixed, repeats included.
    let seed = 7;
    const next = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const batch: VerdictEvent[] = Array.from({ length: 400 }, () => {
      const denied = next(3) === 0;
      return event([80, 443, 5432][next(3)] as number, denied ? 'denied' : 'allowed', {
        at: Date.parse('2026-01-01T00:00:00Z') + next(5) * 1000,
        srcPort: 30000 + next(1000),
        ...(next(4) === 0 ? { dst: '192.0.2.9' } : {}),
        ...(denied ? { deniedBy: next(2) === 0 ? ('ingress' as const) : ('egress' as const) } : {}),
        ...(next(5) === 0 ? { weight: 64, sampled: true } : {}),
      });
    });
    const one = new FlowTable();
    for (const e of batch) one.add(attributeEvent(attributionContext(cluster, 'n2'), e));
    const context = attributionContext(cluster, 'n2');
    const records = attributeEvents(context, batch);
    const together = new FlowTable();
    for (const record of records) together.add(record);
    const sorted = (table: FlowTable): FlowRecord[] =>
      table.list().sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    assert.deepEqual(sorted(together), sorted(one));
    assert.equal(records.length, one.stats().records);
    assert.ok(records.length < batch.length / 4, `${records.length} records for ${batch.length} events`);
    // Judged at most once per connection (once per class of them: classes.test.ts): a second
    // batch of the same connections judges nothing new.
    const judged = context.memo.size;
    assert.ok(judged > 0 && judged <= records.length, `${judged} judgements`);
    attributeEvents(context, batch);
    assert.equal(context.memo.size, judged);
  });
});

describe('FlowTable', () => {
  const record = (port: number, at: string): FlowRecord => ({
    src: { ip: '10.0.1.1', pod: 'prod/web' },
    dst: { ip: '10.0.2.1', pod: 'prod/db' },
    protocol: 'TCP',
    port,
    verdict: 'allowed',
    decidedBy: [],
    count: 1,
    firstSeen: at,
    lastSeen: at,
  });

  it('aggregates equal flows and evicts the least recently seen beyond capacity', () => {
    const table = new FlowTable(2);
    const heard: FlowRecord[] = [];
    const stop = table.subscribe((r) => heard.push(r));
    table.add(record(1, '2026-01-01T00:00:01.000Z'));
    table.add(record(2, '2026-01-01T00:00:02.000Z'));
    table.add(record(1, '2026-01-01T00:00:03.000Z'));
    table.add(record(3, '2026-01-01T00:00:04.000Z'));
    assert.deepEqual(
      table.list().map((r) => [r.port, r.count]),
      [
        [1, 2],
        [3, 1],
      ],
    );
    const first = table.list({ port: 1 })[0];
    assert.equal(first?.firstSeen, '2026-01-01T00:00:01.000Z');
    assert.equal(first?.lastSeen, '2026-01-01T00:00:03.000Z');
    assert.deepEqual(table.stats(), { records: 2, capacity: 2, evicted: 1, connections: 4 });
    stop();
    table.add(record(4, '2026-01-01T00:00:05.000Z'));
    assert.equal(heard.length, 4);
  });
});

describe('flow filters', () => {
  it('parses and matches, and says which parameter is wrong', () => {
    const filter = parseFlowFilter(
      new URLSearchParams('from=prod/&to=prod/db&protocol=tcp&port=5432&verdict=allowed'),
    );
    assert.deepEqual(filter, {
      from: 'prod/',
      to: 'prod/db',
      verdict: 'allowed',
      protocol: 'TCP',
      port: 5432,
    });
    const record = attributeEvent(attributionContext(cluster, undefined), event(5432, 'allowed'));
    assert.equal(matchesFlow(record, filter as never), true);
    assert.equal(matchesFlow(record, { policy: 'prod/db-ingress' }), true);
    assert.equal(matchesFlow(record, { policy: 'prod/other' }), false);
    assert.equal(matchesFlow(record, { namespace: 'dev' }), false);
    assert.deepEqual(parseFlowFilter(new URLSearchParams('port=0')), {
      error: 'port must be 1-65535, not "0"',
    });
    assert.deepEqual(parseFlowFilter(new URLSearchParams('verdict=maybe')), {
      error: 'verdict must be allowed or denied, not "maybe"',
    });
  });
});
