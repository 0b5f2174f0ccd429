/**
 * serve following agents' `/flows` (`--agent`, `--lab`): the agent's own endpoint code
 * (`agent/flow-feed.ts` over a flow table, on a Unix socket as a lab's agents listen) — a record
 * the agent adds is on `/api/flows` within a second, an agent that goes away is said so (its
 * records stay), and one that comes back is read again. And the CLI's flow-source flags refuse
 * what they cannot use, in one line.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveFlows } from '../../src/agent/flow-feed.ts';
import { FlowTable, type FlowRecord } from '../../src/flows/index.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import { startServer, type RunningServer } from '../../src/serve/index.ts';
import { cli } from '../helpers/cli.ts';
import { SHOP_RUNNING, shopFlowRecords } from './flow-fixture.ts';

async function agentOn(socket: string, table: FlowTable): Promise<Server> {
  const server = createServer((request, response) => serveFlows(table, request, response));
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return server;
}

const closeAgent = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

interface Answer {
  total: number;
  source: string;
  flows: (FlowRecord & { decidedText: string; disagreement?: string })[];
  problems: { source: string; message: string }[];
}

describe('palisade serve: observed flows followed from agents', () => {
  let dir = '';
  let socket = '';
  let table: FlowTable;
  let agent: Server | undefined;
  let served: RunningServer;
  let records: FlowRecord[];
  const flows = async (): Promise<Answer> =>
    (await (await fetch(new URL('/api/flows', served.url))).json()) as Answer;
  const until = async (check: (a: Answer) => boolean, what: string): Promise<Answer> => {
    const end = Date.now() + 5_000;
    for (;;) {
      const answer = await flows();
      if (check(answer)) return answer;
      if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(answer).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  before(async () => {
    records = await shopFlowRecords();
    dir = mkdtempSync(join(tmpdir(), `palisade-serve-agents-${process.pid}-`));
    socket = join(dir, 'agent-node-2.sock');
    table = new FlowTable();
    table.add(records[0] as FlowRecord);
    agent = await agentOn(socket, table);
    served = await startServer({
      read: () => loadCluster(SHOP_RUNNING, { semantics: 'v1' }),
      watch: [],
      semantics: 'v1',
      address: '127.0.0.1',
      port: 0,
      flows: { kind: 'agents', agents: [{ label: 'agent of node-2', url: `unix:${socket}` }] },
    });
  });
  after(async () => {
    await served?.close();
    if (agent) await closeAgent(agent);
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads the agent's records, and each new one as the agent adds it", async () => {
    const first = await until((a) => a.total === 1, 'the first record');
    assert.equal(first.source, 'agent of node-2');
    assert.deepEqual(first.problems, []);
    for (const record of records.slice(1)) table.add(record);
    const all = await until((a) => a.total === records.length, 'every record');
    assert.deepEqual(
      all.flows.filter((f) => f.disagreement !== undefined),
      [],
      "the input serve reads is what the agents' records were named by",
    );
    // An update of a record replaces it: its count grows, the records stay as many.
    table.add(records[0] as FlowRecord);
    const updated = await until(
      (a) =>
        a.flows.some((f) => f.count === 2 * (records[0] as FlowRecord).count && f.port === records[0]?.port),
      'the updated count',
    );
    assert.equal(updated.total, records.length);
  });

  it('says when the agent goes away, keeps its records, and reads it again when it is back', async () => {
    await closeAgent(agent as Server);
    agent = undefined;
    const gone = await until((a) => a.problems.length > 0, 'the problem');
    assert.equal(gone.problems[0]?.source, 'agent of node-2');
    assert.equal(gone.total, records.length);
    rmSync(socket, { force: true });
    agent = await agentOn(socket, table);
    await new Promise((r) => setTimeout(r, 2_500));
    await until((a) => a.problems.length === 0, 'reconnected');
  });

  it('the CLI refuses a flow file that is not there, and two sources at once', async () => {
    const missing = await cli(['serve', '-f', 'examples/shop', '--flows', join(dir, 'none.ndjson')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--flows .*none\.ndjson: no such file/);
    const both = await cli([
      'serve',
      '-f',
      'examples/shop',
      '--flows',
      'examples/flows/shop.ndjson',
      '--agent',
      'http://127.0.0.1:1',
    ]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--flows and --agent\/--lab exclude each other/);
    const bad = await cli(['serve', '-f', 'examples/shop', '--agent', 'ftp://x']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--agent ftp:\/\/x: expected http:\/\/host:port or unix:\/path/);
  });
});
