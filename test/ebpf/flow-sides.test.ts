/**
 * Pairing the two sides the eBPF program counts for connections between two pods of the node
 * (src/datapaths/ebpf/flow-sides.ts), by count: the kernel's counts carry no source port.
 * program-flows.root.test.ts runs it on what the program counted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeSides } from '../../src/datapaths/ebpf/flow-sides.ts';
import type { VerdictEvent } from '../../src/flows/types.ts';

/** An event without its times, for comparing. */
const shape = ({ at: _at, firstAt: _firstAt, ...rest }: VerdictEvent) => rest;
const byText = (events: VerdictEvent[]) =>
  events.map(shape).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('mergeSides (the two sides of connections between two pods of the node)', () => {
  const at = Date.parse('2026-01-01T00:00:00Z');
  const side = (
    kernel: string,
    verdict: 'allowed' | 'denied',
    weight: number,
    extra: Partial<VerdictEvent> = {},
  ): VerdictEvent => ({
    at,
    protocol: 'TCP',
    src: '10.0.0.1',
    dst: '10.0.0.2',
    port: 80,
    verdict,
    ...(verdict === 'denied' ? { deniedBy: kernel === 'ebpf egress' ? 'egress' : 'ingress' } : {}),
    kernel,
    weight,
    ...extra,
  });

  it('pairs by count, and reports what one side has left over as that side alone', () => {
    // 7 allowed on egress; the ingress side read so far: 2 denied, 4 allowed (one not yet read).
    const merged = mergeSides([
      side('ebpf egress', 'allowed', 7, { firstAt: at - 1000 }),
      side('ebpf egress', 'denied', 1),
      side('ebpf ingress', 'denied', 2),
      side('ebpf ingress', 'allowed', 4, { sampled: true }),
    ]);
    assert.deepEqual(
      byText(merged),
      byText([
        side('ebpf egress', 'denied', 1),
        side('ebpf egress+ingress', 'denied', 2, { deniedBy: 'ingress' }),
        side('ebpf egress+ingress', 'allowed', 4, { sampled: true }),
        side('ebpf egress', 'allowed', 1),
      ]),
    );
    const both = merged.find((e) => e.kernel === 'ebpf egress+ingress' && e.verdict === 'allowed');
    assert.equal(both?.firstAt, at - 1000, 'the time both sides span');
  });

  it('passes one side alone, and never counts a connection twice', () => {
    const alone = [side('ebpf ingress', 'allowed', 3), side('ebpf egress', 'denied', 2, { dst: '10.0.0.9' })];
    assert.deepEqual(byText(mergeSides(alone)), byText(alone));
    const more = mergeSides([side('ebpf egress', 'allowed', 2), side('ebpf ingress', 'allowed', 5)]);
    assert.deepEqual(
      byText(more),
      byText([side('ebpf egress+ingress', 'allowed', 2), side('ebpf ingress', 'allowed', 3)]),
    );
  });
});
