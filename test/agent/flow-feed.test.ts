/**
 * The agent's flow feed polls the datapath's reports every 100 ms while there are any, and less
 * often while there are none — twice as long after each empty poll, up to 400 ms — but soon again
 * when the datapath says it holds reports for a later poll; every record reaches the table.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { startFlowFeed } from '../../src/agent/flow-feed.ts';
import { FlowTable } from '../../src/flows/index.ts';
import type { FlowBatch } from '../../src/agent/types.ts';
import type { FlowRecord } from '../../src/flows/types.ts';

const record = (port: number): FlowRecord => ({
  src: { ip: '10.0.0.1' },
  dst: { ip: '10.0.0.2' },
  port,
  protocol: 'TCP',
  verdict: 'allowed',
  decidedBy: [],
  count: 1,
  firstSeen: '2026-01-01T00:00:00.000Z',
  lastSeen: '2026-01-01T00:00:00.000Z',
});

describe('the flow feed', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  it('polls every 100 ms while reports come, backs off to 400 ms while none do, and soon when some are pending', async () => {
    let now = 0;
    const polls: number[] = [];
    let next: () => FlowBatch = () => ({ records: [], lost: 0 });
    const table = new FlowTable();
    const feed = startFlowFeed({
      realizer: {
        flows: () => {
          polls.push(now);
          return Promise.resolve(next());
        },
      },
      table,
    });
    /** Moves the clock in 10 ms steps, letting each poll's promise settle. */
    const advance = async (ms: number): Promise<void> => {
      for (let t = 0; t < ms; t += 10) {
        now += 10;
        mock.timers.tick(10);
        for (let i = 0; i < 5; i++) await Promise.resolve();
      }
    };
    const gaps = (from: number): number[] =>
      polls
        .slice(from)
        .map((p, i, all) => (i === 0 ? p : p - (all[i - 1] as number)))
        .slice(1);
    try {
      await advance(2000);
      assert.deepEqual(
        gaps(0).slice(0, 4),
        [200, 400, 400, 400],
        'an idle datapath: 100, 200, 400, 400 … ms',
      );
      let port = 1;
      next = () => ({ records: [record(port++)], lost: 0 });
      let mark = polls.length;
      await advance(1000);
      assert.ok(
        gaps(mark).every((g) => g === 100),
        `reports every poll: ${gaps(mark).join(', ')}`,
      );
      assert.equal(table.list().length, port - 1, 'each poll’s record in the table');
      next = () => ({ records: [], lost: 0, pending: true });
      mark = polls.length;
      await advance(1000);
      assert.ok(
        gaps(mark).every((g) => g === 100),
        `pending: ${gaps(mark).join(', ')}`,
      );
    } finally {
      const stopping = feed.stop();
      mock.timers.tick(1000);
      await stopping;
    }
  });
});
