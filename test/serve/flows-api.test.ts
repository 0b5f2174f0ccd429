/**
 * serve's flow API over a flow file beside the running shop's manifests: `/api/flows` answers the
 * records with their rules in `check`'s words and the `/api/check` question of each, takes the
 * agent's filters (and refuses a bad one as the agent does), lists what the staged policies would
 * break or open as `palisade flows --staged` does, says where serve's input names another rule
 * than the agent, refuses an answer over 10 MB, and announces an edited flow file on the event
 * stream; `/api/graph?flows=1` places the observed flows on the graph's nodes.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { stagedView, type FlowRecord } from '../../src/flows/index.ts';
import { ndjson, serveShopFlows, shopFlowRecords, type FlowServe } from './flow-fixture.ts';
import { serveCopy } from './helpers.ts';

interface Answer {
  version: number;
  total: number;
  matched: number;
  source: string;
  flows: (FlowRecord & {
    decidedText: string;
    stagedText?: string;
    check: { from: string; to: string; port: string; protocol: string } | null;
    disagreement?: string;
  })[];
  diagnostics: { code: string; line: number }[];
}

describe('palisade serve: observed flows (API)', () => {
  let served: FlowServe;
  let records: FlowRecord[];
  const get = async (path: string): Promise<{ status: number; body: Answer & { error?: string } }> => {
    const response = await fetch(new URL(path, served.server.url));
    return { status: response.status, body: (await response.json()) as Answer & { error?: string } };
  };
  before(async () => {
    records = await shopFlowRecords();
    served = await serveShopFlows(ndjson(records));
  });
  after(() => served?.close());

  it("docs/commands/serve.md's example flow file is these records (the agents' attribution of the fixture)", () => {
    assert.equal(readFileSync('examples/flows/shop-lab.ndjson', 'utf8'), ndjson(records));
  });

  it('answers every record, its rules in check words, and the check question of each', async () => {
    const { status, body } = await get('/api/flows');
    assert.equal(status, 200);
    assert.equal(body.total, records.length);
    assert.equal(body.flows.length, records.length);
    const apiToDb = body.flows.find((f) => f.src.pod === 'shop/api-5f6b-m9w1c' && f.node === 'node-2');
    assert.ok(apiToDb);
    assert.equal(apiToDb.decidedText, 'ingress: allowed by shop/db ingress[0]');
    assert.deepEqual(apiToDb.check, {
      from: 'shop/api-5f6b-m9w1c',
      to: 'shop/db-0',
      port: '5432',
      protocol: 'TCP',
    });
    // serve reads what the agents enforce: no flow disagrees.
    assert.deepEqual(
      body.flows.filter((f) => f.disagreement !== undefined).map((f) => f.disagreement),
      [],
    );
    // Denied first.
    assert.equal(body.flows[0]?.verdict, 'denied');
  });

  it("takes the agent's filters and a text search; refuses a bad filter", async () => {
    const denied = (await get('/api/flows?verdict=denied')).body.flows;
    assert.deepEqual(
      denied.map((f) => f.verdict),
      records.filter((r) => r.verdict === 'denied').map(() => 'denied'),
    );
    const toDb = (await get('/api/flows?to=shop/db-0&from=monitoring/')).body.flows;
    assert.deepEqual(
      toDb.map((f) => `${f.src.pod} ${f.dst.pod}`),
      ['monitoring/prometheus-0 shop/db-0'],
    );
    const searched = (await get('/api/flows?q=PAYMENTS/gateway')).body.flows;
    assert.equal(searched.length, 1);
    assert.match(searched[0]?.decidedText ?? '', /egress: isolated by payments\/gateway, no rule allows it/);
    // The first N (denied first), with how many match in all: what the page asks for.
    const first = (await get('/api/flows?limit=2')).body;
    assert.deepEqual(
      [first.flows.length, first.matched, first.flows.map((f) => f.verdict)],
      [2, records.length, ['denied', 'denied']],
    );
    assert.equal((await get('/api/flows?limit=0')).status, 400);
    const bad = await get('/api/flows?verdict=maybe');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'verdict must be allowed or denied, not "maybe"');
  });

  it('staged=true: what the staged policies would break or open, as flows --staged judges it', async () => {
    const { body } = await get('/api/flows?staged=true');
    const expected = stagedView(records);
    assert.ok(expected.length >= 2, 'the fixture has staged changes both ways');
    assert.deepEqual(
      body.flows
        .map((f) => `${f.src.pod} ${f.dst.pod} ${f.port} ${f.node} would be ${f.staged?.verdict}`)
        .sort(),
      expected
        .map((f) => `${f.src.pod} ${f.dst.pod} ${f.port} ${f.node} would be ${f.staged?.verdict}`)
        .sort(),
    );
    const opens = body.flows.find((f) => f.dst.pod === 'shop/db-0');
    assert.equal(opens?.staged?.verdict, 'allowed');
    // Both ends on node-2: its agent judged both sides, and names both staged rules.
    assert.equal(
      opens?.stagedText,
      'egress: allowed by monitoring/prometheus-egress egress[0]; ingress: allowed by shop/db-from-monitoring ingress[0]',
    );
    const breaks = body.flows.find((f) => f.dst.pod === 'shop/frontend-7c9d-q8m2z');
    assert.equal(breaks?.staged?.verdict, 'denied');
    assert.match(breaks?.stagedText ?? '', /egress: isolated by monitoring\/prometheus-egress/);
  });

  it('places the observed flows on the graph: arrows that carried traffic, denied pairs', async () => {
    const response = await fetch(new URL('/api/graph?port=any&flows=1', served.server.url));
    const graph = (await response.json()) as {
      nodes: { id: string }[];
      edges: { from: string; to: string }[];
      observed: { pairs: { from: string; to: string; allowed: number; denied: number; edge?: number }[] };
    };
    const pair = (from: string, to: string) =>
      graph.observed.pairs.find((p) => p.from === from && p.to === to);
    const carried = pair('ep:shop/api[Deployment]', 'ep:shop/db[StatefulSet]');
    assert.equal(carried?.allowed, 80);
    assert.deepEqual(graph.edges[carried?.edge ?? -1], {
      ...graph.edges[carried?.edge ?? -1],
      from: 'ep:shop/api[Deployment]',
      to: 'ep:shop/db[StatefulSet]',
    });
    const denied = pair('ep:shop/frontend[Deployment]', 'ep:shop/db[StatefulSet]');
    assert.equal(denied?.denied, 3);
    assert.equal(denied?.edge, undefined, 'no arrow: the input denies it');
  });

  it('places flows on namespaces when the graph is by namespace, and keeps to its port', async () => {
    type Observed = { observed: { pairs: { from: string; to: string; allowed: number; denied: number }[] } };
    const byNamespace = (await (
      await fetch(new URL('/api/graph?port=any&group-by=namespace&flows=1', served.server.url))
    ).json()) as Observed;
    const shop = byNamespace.observed.pairs.find((p) => p.from === 'ns:shop' && p.to === 'ns:shop');
    // api → db on both nodes (40 + 40), frontend → api (25); frontend → db denied (3).
    assert.deepEqual(shop && { allowed: shop.allowed, denied: shop.denied }, { allowed: 105, denied: 3 });
    const onPort = (await (
      await fetch(new URL('/api/graph?port=8000/TCP&flows=1', served.server.url))
    ).json()) as Observed;
    assert.deepEqual(
      onPort.observed.pairs.map((p) => `${p.from} ${p.to} ${p.allowed}`),
      ['ep:shop/frontend[Deployment] ep:shop/api[Deployment] 25'],
    );
  });

  it("says where serve's input names another rule than the agent did", async () => {
    // The agent says shop/db let the api in by another rule than the input's: a stale manifest.
    const edited = records.map((r) =>
      r.node === 'node-2' && r.src.pod === 'shop/api-5f6b-m9w1c'
        ? { ...r, decidedBy: r.decidedBy.map((d) => ({ ...d, policy: 'shop/db-old' })) }
        : r,
    );
    writeFileSync(served.flowFile, ndjson(edited));
    const deadline = Date.now() + 5_000;
    let flow: Answer['flows'][number] | undefined;
    while (Date.now() < deadline) {
      flow = (await get('/api/flows?from=shop/api-5f6b-m9w1c&node=node-2')).body.flows[0];
      if (flow?.disagreement) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(
      flow?.disagreement,
      "the agent: ingress: allowed by shop/db-old ingress[0] — serve's input: ingress: allowed by shop/db ingress[0]",
    );
    writeFileSync(served.flowFile, ndjson(records));
  });

  it('announces a changed flow file on the event stream', async () => {
    // Quiet first (the last test's writes announced), then the version the page would show.
    await new Promise((r) => setTimeout(r, 400));
    const before = (await get('/api/flows')).body.version;
    const controller = new AbortController();
    const response = await fetch(new URL('/api/events', served.server.url), { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(served.flowFile, ndjson(records.slice(0, 2)));
    const announced = (): boolean =>
      [...text.matchAll(/event: flows\ndata: \{"version":(\d+)\}/g)].some((m) => Number(m[1]) > before);
    while (!announced() && Date.now() - started < 5_000) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    controller.abort();
    assert.ok(announced(), text);
    assert.equal((await get('/api/flows')).body.total, 2);
    writeFileSync(served.flowFile, ndjson(records));
  });

  it('refuses an answer over 10 MB, saying how to narrow it; a bad line is a located diagnostic', async () => {
    const big = 'x'.repeat(6000);
    const many = Array.from({ length: 1800 }, (_, i) => ({
      ...(records[0] as FlowRecord),
      port: 1000 + i,
      src: { ...(records[0] as FlowRecord).src, labels: { note: big } },
    }));
    writeFileSync(served.flowFile, `${ndjson(many)}{"src": nope}\n`);
    const deadline = Date.now() + 10_000;
    let answer = await get('/api/flows');
    while (answer.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await get('/api/flows');
    }
    assert.equal(answer.status, 413);
    assert.match(
      answer.body.error ?? '',
      /^the answer would be about 1\d MB, more than the 10 MB the API sends: 1800 flows match: narrow them \(verdict=/,
    );
    const narrowed = await get('/api/flows?port=1000');
    assert.equal(narrowed.status, 200);
    assert.equal(narrowed.body.flows.length, 1);
    assert.deepEqual(
      narrowed.body.diagnostics.map((d) => d.line),
      [1801],
    );
    writeFileSync(served.flowFile, ndjson(records));
  });

  it('answers 404 without a flow source', async () => {
    const plain = await serveCopy('examples/shop');
    try {
      const response = await fetch(new URL('/api/flows', plain.server.url));
      assert.equal(response.status, 404);
      assert.match(
        ((await response.json()) as { error: string }).error,
        /without a flow source \(--flows FILE/,
      );
      const summary = (await (await fetch(new URL('/api/summary', plain.server.url))).json()) as {
        flows: unknown;
      };
      assert.equal(summary.flows, null);
    } finally {
      await plain.close();
    }
  });
});
