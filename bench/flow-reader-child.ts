/**
 * A benchmark process that reads a node's flow reports as the agent does (`--flow-log`): on the
 * agent's schedule (agent/flow-feed.ts: every 100 ms while reports come) the datapath's reader
 * (the nftables flow log's nflog group, or the eBPF programs' counts), each connection named by
 * the reference evaluator over the node's cluster (attributeEvents, the realizer's own code) and
 * added to a bounded flow table. Its CPU time is what flow reporting
 * costs the node beyond the kernel's part; the parent counts it into each connection's CPU.
 *
 * argv[2]: JSON `{ datapath: 'nftables' | 'ebpf', netns?, instance?, objectsFile, node }`.
 * IPC: sends `{ type: 'ready' }`, then answers `'stats'` with what it read so far (its RSS as
 * found, then its heap after a full collection: what it keeps).
 */
import { readFileSync } from 'node:fs';
import { loadFromObjects } from '../src/ingest/index.ts';
import { attributeEvents, attributionContext, FlowTable } from '../src/flows/index.ts';
import { openFlowLog } from '../src/datapaths/nftables/flow-log.ts';
import { openFlowEvents } from '../src/datapaths/ebpf/kernel/flow-events.ts';
import { startFlowFeed } from '../src/agent/flow-feed.ts';
import type { VerdictEvent } from '../src/flows/types.ts';

interface ReaderConfig {
  readonly datapath: 'nftables' | 'ebpf';
  readonly netns?: string;
  readonly instance?: string;
  readonly objectsFile: string;
  readonly node: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as ReaderConfig;
const cluster = loadFromObjects(JSON.parse(readFileSync(config.objectsFile, 'utf8')) as object[]).cluster;
const context = attributionContext(cluster, config.node, { allowNodeLocal: true });
const reader: { read(): VerdictEvent[]; pending?(): boolean; readonly lost: number; close(): void } =
  config.datapath === 'nftables'
    ? openFlowLog(config.netns !== undefined ? { netns: config.netns } : {})
    : openFlowEvents({ instance: config.instance ?? '' });
const table = new FlowTable();
let events = 0;
let mismatches = 0;
// Polled on the agent's own schedule (agent/flow-feed.ts): every 100 ms while reports come.
const feed = startFlowFeed({
  realizer: {
    flows() {
      const batch = reader.read();
      events += batch.length;
      const records = attributeEvents(context, batch);
      for (const record of records) if (record.mismatch) mismatches += record.count;
      return Promise.resolve({ records, lost: reader.lost, pending: reader.pending?.() ?? false });
    },
  },
  table,
});
process.on('message', (message) => {
  if (message !== 'stats') return;
  const rssBytes = process.memoryUsage().rss;
  // What the reading keeps, apart from garbage not yet collected (forked with --expose-gc).
  (globalThis as { gc?: () => void }).gc?.();
  process.send?.({
    type: 'stats',
    events,
    mismatches,
    lost: reader.lost,
    ...table.stats(),
    rssBytes,
    heapBytes: process.memoryUsage().heapUsed,
    externalBytes: process.memoryUsage().external + process.memoryUsage().arrayBuffers,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
  });
});
process.on('disconnect', () => {
  void feed.stop().finally(() => {
    reader.close();
    process.exit(0);
  });
});
process.send?.({ type: 'ready' });
