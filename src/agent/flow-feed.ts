/**
 * The agent's flow feed: asks the realizer for the verdicts its datapath reported — every
 * `intervalMs` (100 ms: a flow reaches `/flows?follow` well within a second) while there are
 * any, less often while there are none (twice as long after each empty poll, up to `idleMs`,
 * 400 ms: Node's own wake-up costs about a third of a millisecond of CPU, so an idle node's agent
 * polling ten times a second spent ~4 ms a second on nothing) — adds them to the bounded flow
 * table, counts them in the metrics, and serves them as NDJSON on `/flows`: every record
 * matching the filters, then, with `follow`, each record as it is updated until the client goes
 * away. A datapath holding reports for a later poll (eBPF's counts) is polled again soon. One
 * request to the realizer at a time: a long realization delays the next poll rather than
 * queueing polls behind it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FlowTable } from '../flows/index.ts';
import { parseFlowFilter, matchesFlow } from '../flows/index.ts';
import type { FlowRecord } from '../flows/types.ts';
import type { FlowBatch, AgentLog } from './types.ts';

interface FlowFeedOptions {
  readonly realizer: { flows?(): Promise<FlowBatch> };
  readonly table: FlowTable;
  readonly onBatch?: (records: readonly FlowRecord[], lost: number) => void;
  readonly log?: AgentLog;
  /** Default 100 ms. */
  readonly intervalMs?: number;
  /** The longest wait after polls that found nothing; default 400 ms. */
  readonly idleMs?: number;
}

interface FlowFeed {
  stop(): Promise<void>;
}

export function startFlowFeed(options: FlowFeedOptions): FlowFeed {
  const { realizer, table } = options;
  const interval = options.intervalMs ?? 100;
  const idle = Math.max(interval, options.idleMs ?? 400);
  let stopped = false;
  let failures = 0;
  let delay = interval;
  let timer: NodeJS.Timeout | undefined;
  /** One poll; what it found sets the wait before the next. */
  const poll = async (): Promise<void> => {
    if (!realizer.flows) return;
    try {
      const batch = await realizer.flows();
      for (const record of batch.records) table.add(record);
      options.onBatch?.(batch.records, batch.lost);
      failures = 0;
      delay = batch.records.length > 0 || batch.pending ? interval : Math.min(idle, delay * 2);
    } catch (error) {
      // A restarting worker answers with an error once; say so only when it keeps failing.
      if (++failures === 10)
        options.log?.warn({ error: String(error) }, 'reading flow verdicts keeps failing');
      delay = interval;
    }
  };
  let running: Promise<void> = Promise.resolve();
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = poll().then(schedule);
    }, delay);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** `GET /flows?…[&follow]`: NDJSON of the table's records; with `follow`, then every update. */
export function serveFlows(table: FlowTable, request: IncomingMessage, response: ServerResponse): void {
  const params = new URL(request.url ?? '/', 'http://agent').searchParams;
  const filter = parseFlowFilter(params);
  if ('error' in filter) {
    response.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(`${filter.error}\n`);
    return;
  }
  response.writeHead(200, { 'content-type': 'application/x-ndjson' });
  const follow = params.has('follow') && params.get('follow') !== 'false';
  for (const record of table.list(filter)) response.write(`${JSON.stringify(record)}\n`);
  if (!follow) {
    response.end();
    return;
  }
  const unsubscribe = table.subscribe((record) => {
    if (matchesFlow(record, filter)) response.write(`${JSON.stringify(record)}\n`);
  });
  const done = (): void => {
    unsubscribe();
  };
  request.on('close', done);
  response.on('close', done);
}
