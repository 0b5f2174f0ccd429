/**
 * The BPF program's flow counts (root, clang, bpftool), with packets run through node n1's hooks
 * with BPF_PROG_TEST_RUN and read back as the agent reads them (openFlowEvents, mergeSides): each
 * side judged for a new connection is counted by kind — not by source port — with its verdict,
 * replies are not counted, a read drains what the programs counted before the previous one, and
 * the two sides of a connection between two pods of the node read as one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PinnedProgram, TC_ACT_OK, TC_ACT_SHOT } from '../../src/datapaths/ebpf/kernel/index.ts';
import { openFlowEvents } from '../../src/datapaths/ebpf/kernel/flow-events.ts';
import { mergeSides } from '../../src/datapaths/ebpf/flow-sides.ts';
import { EbpfRenderer } from '../../src/datapaths/ebpf/index.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import type { VerdictEvent } from '../../src/flows/types.ts';
import { clusterOf, ipOf } from '../helpers/builders.ts';
import { bpftoolDump, needsEbpf, scratchProgram } from '../helpers/ebpf.ts';
import { base, db, dbFromWeb, tcp, web } from '../helpers/ebpf-pods.ts';
import { freshPort } from './program-helpers.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SKIP = needsEbpf('testing the BPF program');

/** An event without its times, for comparing. */
const shape = ({ at: _at, firstAt: _firstAt, ...rest }: VerdictEvent) => rest;
const byText = (events: VerdictEvent[]) =>
  events.map(shape).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('the BPF program: flow counts', { skip: SKIP }, () => {
  const n1 = scratchProgram('pf1');

  it('counts each side of each new connection by kind and verdict, and reads them once', async () => {
    const state = new ClusterState();
    const renderer = new EbpfRenderer({ state, node: 'n1', kernel: n1.maps(), flowEvents: true });
    new PolicyPipeline({ state, node: 'n1', renderers: [renderer] }).apply({
      type: 'resync',
      cluster: clusterOf([...base, dbFromWeb]),
    });
    const from = PinnedProgram.open(n1.location, 'from_pod');
    const to = PinnedProgram.open(n1.location, 'to_pod');
    const reader = openFlowEvents(n1.location);
    try {
      /** Two reads, each after the last switch settled: everything counted before the first. */
      const readAll = async (): Promise<VerdictEvent[]> => {
        const out: VerdictEvent[] = [];
        for (let i = 0; i < 2; i++) {
          await sleep(15);
          out.push(...reader.read());
        }
        return out;
      };
      await readAll();
      const started = Date.now();
      for (let i = 0; i < 5; i++) {
        const sport = freshPort();
        assert.equal(from.run(tcp(web, db, sport, 80)).retval, TC_ACT_OK);
        assert.equal(to.run(tcp(web, db, sport, 80)).retval, TC_ACT_OK);
        // A reply is tracked: not a new connection, not counted.
        assert.equal(from.run(tcp(db, web, 80, sport)).retval, TC_ACT_OK);
      }
      for (let i = 0; i < 3; i++) {
        // web's egress lets it out; db's ingress (judged there too, handed to to_pod) drops it.
        const sport = freshPort();
        assert.equal(from.run(tcp(web, db, sport, 5432)).retval, TC_ACT_OK);
        assert.equal(to.run(tcp(web, db, sport, 5432)).retval, TC_ACT_SHOT, 'db isolated');
      }
      // From outside the node: only db's side is judged here.
      const outside = ipOf('192.0.2.7');
      for (let i = 0; i < 2; i++) assert.equal(to.run(tcp(outside, db, freshPort(), 80)).retval, TC_ACT_SHOT);
      assert.deepEqual(reader.read(), [], 'counted since the last read: not drained yet');
      assert.equal(reader.pending(), true, 'what a later read gives is pending');
      const events = await readAll();
      /** One kind's count as the reader gives it: `kernel` names the side, a drop its side. */
      const kind = (port: number, kernel: string, denied: boolean, weight: number, src = '10.0.0.1') => ({
        at: 0,
        protocol: 'TCP' as const,
        src,
        dst: '10.0.0.2',
        port,
        verdict: denied ? ('denied' as const) : ('allowed' as const),
        ...(denied ? { deniedBy: 'ingress' as const } : {}),
        kernel,
        weight,
      });
      assert.deepEqual(
        byText(events),
        byText([
          kind(80, 'ebpf egress', false, 5),
          kind(80, 'ebpf ingress', false, 5),
          kind(5432, 'ebpf egress', false, 3),
          kind(5432, 'ebpf ingress', true, 3),
          kind(80, 'ebpf ingress', true, 2, '192.0.2.7'),
        ]),
      );
      for (const event of events) {
        assert.ok(
          event.at >= started - 50 && event.at <= Date.now() + 50,
          `seen when made: ${event.at - started} ms`,
        );
        assert.ok((event.firstAt ?? event.at) <= event.at);
      }
      assert.deepEqual(
        byText(mergeSides(events)),
        byText([
          kind(80, 'ebpf egress+ingress', false, 5),
          kind(5432, 'ebpf egress+ingress', true, 3),
          kind(80, 'ebpf ingress', true, 2, '192.0.2.7'),
        ]),
      );
      assert.deepEqual(await readAll(), [], 'each count is read once');
      assert.equal(reader.pending(), false, 'nothing pending once read');
      assert.equal(reader.lost, 0);
      // The reader drains a map only when entries were made in it since: the programs count
      // each entry they make, per CPU and map (five kinds, each made once).
      const budgets = bpftoolDump(n1.location, 'flow_budget')[0]?.formatted as {
        values: { value: { made: number[] } }[];
      };
      const made = budgets.values.flatMap((v) => v.value.made).reduce((sum, n) => sum + n, 0);
      assert.equal(made, 5, 'one entry made per kind');
    } finally {
      reader.close();
      renderer.settle();
      from.close();
      to.close();
    }
  });
});
