/**
 * The web app's routes: the page and its bundle, the read-only JSON API under /api/ (the same
 * data as the CLI's `-o json`; docs/SERVE.md lists every endpoint) and the event stream that
 * tells the page a new snapshot of the input is ready.
 */
import { Hono, type Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import {
  CLASS_FORMATS,
  classReport,
  computeMatrix,
  computeViewMatrix,
  diffJson,
  estimateClassOutput,
  estimateMatrixExtras,
  estimateMatrixOutput,
  formatSize,
  ingressControllerPeer,
  notEvaluated,
  OUTSIDE_BUDGET,
  outsideClasses,
  MATRIX_FORMATS,
  matrixExtras,
  PLAIN,
} from '../analysis/index.ts';
import { PROTOCOLS, type Protocol } from '../model/types.ts';
import type { PortSet } from '../semantics/index.ts';
import type { WebAssets } from './assets.ts';
import { parseFlowFilter } from '../flows/index.ts';
import { observedOnGraph, servedFlows } from './flow-view.ts';
import type { LiveFlows } from './live-flows.ts';
import type { LiveInput } from './live-input.ts';
import { guard } from './security.ts';
import { parsePort, RequestError, type Snapshot } from './snapshot.ts';
import { firstViewBlock, PAGE_HEAD, PAGE_TAIL } from './page.ts';
import { inputSummary, summaryAnswer } from './summary.ts';
import type { ApiAnswers, ApiPath, FirstView, FlowsAnswer, HeatmapLevel, VersionEvent } from './api-types.ts';

const LEVELS: readonly HeatmapLevel[] = ['namespace', 'workload', 'pod'];

/** No answer of the API is larger: past it, 413 with the size and what to ask instead. */
const MAX_ANSWER_BYTES = 10_000_000;
const MAX_MATRIX_ANSWERS = 16;
const MAX_KEPT_ANSWER_BYTES = 2_000_000;

function tooLarge(c: Context, bytes: number, instead: string): Response {
  return c.json(
    {
      error: `the answer would be about ${formatSize(bytes)}, more than the ${formatSize(MAX_ANSWER_BYTES)} the API sends: ${instead}`,
    },
    413,
  );
}

/** The first port of a set, as check asks it. */
function firstPort(ports: PortSet): { port: number; protocol: Protocol } | undefined {
  for (const protocol of PROTOCOLS) {
    const range = ports.ranges[protocol][0];
    if (range) return { port: range[0], protocol };
  }
  return undefined;
}

/** Every endpoint of the API, as GET /api answers (and docs/SERVE.md explains). */
const API_ENDPOINTS: Readonly<Record<string, string>> = {
  '/api/summary': 'the input: counts, namespaces, ports policies name, diagnostics and lint counts, version',
  '/api/heatmap?level=namespace|workload|pod&port=P&from=&to=':
    'allowed pod pairs aggregated by namespace, by workload of two namespaces, or pod by pod of two workloads',
  '/api/matrix?port=P&by=workload|pod|class':
    'what `palisade matrix -o json` prints (no port: allowed port sets), with addresses, ingressController and notEvaluated; 413 past 10 MB (ask by=class)',
  '/api/check?from=&to=&port=&protocol=': 'what `palisade check -o json` prints, with its text as `text`',
  '/api/why?level=namespace|workload|pod&from=&to=&port=P':
    'why for one pod pair of a heatmap cell (an allowed one if any) on the port shown, or on one the pair may use: `/api/check`, with `cell`',
  '/api/graph?port=P&group-by=auto|workload|namespace&namespace=NS&svg=1':
    'nodes and edges of allowed connections, brought to a readable size (one namespace: its workloads and their peers); with svg=1 the drawing too; with flows=1 the observed traffic between its nodes (`observed`)',
  '/api/flows?from=&to=&pod=&namespace=&verdict=&protocol=&port=&policy=&node=&staged=&q=&limit=N':
    "observed flows (--flows FILE, --agent, --lab) with the agent's filters, each with its deciding rules in check's words, the /api/check question that explains it and where serve's own answer disagrees; staged=true: what the staged policies would break or open; limit: the first N (denied first, then the most connections; `matched` counts all); 404 without a flow source, 413 past 10 MB",
  '/api/lint': 'what `palisade lint -o json` prints',
  '/api/diagnostics': 'the input diagnostics (as `validate` reports them)',
  '/api/diff': 'what `palisade diff -f AGAINST --to INPUT -o json` prints (404 without --against)',
  '/api/object?name=Kind ns/name': "an object's file, line, column and content",
  '/api/events':
    'server-sent events: `snapshot` with {version} whenever the input was read again; `flows` with {version} whenever the observed flows changed',
};

/**
 * What the page shows first (the document's JSON block, page.ts): the summary, and the namespace heatmap of
 * the port the page opens on — the address's, else the default, whose heatmap the server computed
 * as soon as the input was read.
 */
function firstView(
  snapshot: Snapshot,
  readError: string | undefined,
  asked: string | undefined,
  flows: string | undefined,
): FirstView {
  const summary = summaryAnswer(snapshot, readError, flows);
  const port = asked ?? summary.defaultPort;
  try {
    const heatmap = snapshot.reachability.heatmap(parsePort(port), 'namespace');
    return 'error' in heatmap ? { summary, port } : { summary, port, heatmap };
  } catch (error) {
    if (error instanceof RequestError) return { summary, port };
    throw error;
  }
}

export function createApp(
  live: LiveInput,
  assets: WebAssets,
  hosts: ReadonlySet<string>,
  flows?: LiveFlows,
): Hono {
  const app = new Hono();
  app.use('*', guard(hosts));
  app.onError((error, c) => {
    if (error instanceof RequestError) return c.json({ error: error.message }, 400);
    return c.json({ error: `internal error: ${error.message}` }, 500);
  });

  // The document's head at once; the first view's data when the input has been read.
  app.get('/', (c) => {
    const asked = c.req.query('port');
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode(PAGE_HEAD));
        let block = '';
        try {
          block = firstViewBlock(firstView(await live.first, live.lastError, asked, flows?.description));
        } catch {
          // No first view: the page asks the API, which says what is wrong.
        }
        try {
          controller.enqueue(encoder.encode(block + PAGE_TAIL));
          controller.close();
        } catch {
          // The browser went away meanwhile.
        }
      },
    });
    return c.body(body, 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  });
  app.get('/assets/:name', (c) => {
    const asset = assets.files.get(c.req.param('name'));
    if (!asset) return c.notFound();
    return c.body(asset.body, 200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
  });

  app.get('/api', (c) => c.json({ endpoints: API_ENDPOINTS }));
  /**
   * `/api/matrix`'s answers per input version (`Snapshot`) and question, dropped with the version
   * (the page asks again as people click): MAX_MATRIX_ANSWERS at most, of MAX_KEPT_ANSWER_BYTES.
   */
  const matrixAnswers = new WeakMap<Snapshot, Map<string, string>>();
  // Each route answers what `ApiAnswers` says its path answers (the page reads it by that type).
  const api = <P extends ApiPath>(
    path: P,
    answer: (snapshot: Snapshot, c: Context) => ApiAnswers[P] | Response | Promise<ApiAnswers[P] | Response>,
  ): void => {
    app.get(path, async (c) => {
      // The server listens while the input is first read: the page loads meanwhile.
      await live.first;
      const snapshot = live.snapshot;
      c.header('x-palisade-version', String(snapshot.version));
      const body = await answer(snapshot, c);
      return body instanceof Response ? body : c.json(body);
    });
  };

  api('/api/summary', (s) => summaryAnswer(s, live.lastError, flows?.description));
  api('/api/heatmap', (s, c) => {
    const level = LEVELS.find((l) => l === (c.req.query('level') ?? 'namespace'));
    if (!level) throw new RequestError(`level must be one of ${LEVELS.join(', ')}`);
    const result = s.reachability.heatmap(
      parsePort(c.req.query('port')),
      level,
      c.req.query('from'),
      c.req.query('to'),
    );
    if ('error' in result) throw new RequestError(result.error);
    return result;
  });
  api('/api/matrix', (s, c) => {
    const by = c.req.query('by') ?? 'workload';
    if (by !== 'workload' && by !== 'pod' && by !== 'class')
      throw new RequestError('by must be workload, pod or class');
    const query = parsePort(c.req.query('port'));
    const options = { queries: query ? [query] : [], semantics: s.semantics, engine: 'auto' } as const;
    if (by === 'class') {
      const report = classReport(computeMatrix(s.input.cluster, options));
      const estimate = estimateClassOutput(report, 'json', MAX_ANSWER_BYTES);
      if (estimate.bytes > MAX_ANSWER_BYTES) return tooLarge(c, estimate.bytes, 'ask for a port (port=P)');
      const writer = CLASS_FORMATS.json;
      if (!writer) throw new Error('no JSON writer');
      return c.body([...writer(report, PLAIN)].join(''), 200, { 'content-type': 'application/json' });
    }
    // Answered once per input version and question: the page asks again as people click.
    const key = `${by}|${query ? `${query.port}/${query.protocol}` : ''}`;
    const answers = matrixAnswers.get(s) ?? new Map<string, string>();
    matrixAnswers.set(s, answers);
    const known = answers.get(key);
    if (known !== undefined)
      return c.body(known, 200, { 'content-type': 'application/json', 'cache-status': 'palisade; hit' });
    const matrix = computeViewMatrix(s.input.cluster, { ...options, by });
    const estimate = estimateMatrixOutput(matrix, 'json', MAX_ANSWER_BYTES);
    if (estimate.bytes > MAX_ANSWER_BYTES) return tooLarge(c, estimate.bytes, 'ask by=class');
    const writer = MATRIX_FORMATS.json;
    if (!writer) throw new Error('no JSON writer');
    // As `matrix -o json` writes it: the connections to and from the ranges outside the cluster
    // (left out past the same few seconds' work, and then said in `addressesLeftOut`), the
    // ingress controller's, and the objects the answer does not include.
    const outside = outsideClasses(matrix, s.input.cluster, s.semantics, OUTSIDE_BUDGET);
    const ingressController = ingressControllerPeer(matrix, s.input.cluster, {}, s.semantics);
    const extras = matrixExtras({ notEvaluated: notEvaluated(s.input.cluster), outside, ingressController });
    const more = estimateMatrixExtras(matrix, extras, 'json').bytes;
    if (estimate.bytes + more > MAX_ANSWER_BYTES) return tooLarge(c, estimate.bytes + more, 'ask by=class');
    const body = [...writer(matrix, PLAIN, extras)].join('');
    // Bounded: a client walking through every port keeps a few answers per version at most.
    if (answers.size >= MAX_MATRIX_ANSWERS) answers.clear();
    if (body.length <= MAX_KEPT_ANSWER_BYTES) answers.set(key, body);
    return c.body(body, 200, { 'content-type': 'application/json', 'cache-status': 'palisade; fwd=miss' });
  });
  api('/api/why', (s, c) => {
    const level = LEVELS.find((l) => l === (c.req.query('level') ?? 'pod'));
    if (!level) throw new RequestError(`level must be one of ${LEVELS.join(', ')}`);
    const from = c.req.query('from') ?? '';
    const to = c.req.query('to') ?? '';
    const query = parsePort(c.req.query('port'));
    const pair = s.reachability.representative(query, level, from, to);
    if (!pair)
      throw new RequestError(`no pod pair in ${from} → ${to} (a pod with itself, or names not in the input)`);
    // The port asked about: the one shown, or one the pair may use, or the one policies name most.
    const first = firstPort(pair.ports);
    const fallback = (inputSummary(s).ports[0] ?? '80/TCP').split('/');
    const [port, protocol] = query
      ? [String(query.port), query.protocol]
      : first
        ? [String(first.port), first.protocol]
        : [fallback[0] ?? '80', fallback[1] ?? 'TCP'];
    return { ...s.check(pair.from.id, pair.to.id, port, protocol), cell: { level, from, to } };
  });
  api('/api/check', (s, c) => {
    const need = (name: string): string => {
      const value = c.req.query(name);
      if (!value) throw new RequestError(`${name} is required`);
      return value;
    };
    return s.check(need('from'), need('to'), need('port'), c.req.query('protocol'));
  });
  api('/api/graph', async (s, c) => {
    const groupBy = c.req.query('group-by') ?? 'auto';
    if (groupBy !== 'workload' && groupBy !== 'namespace' && groupBy !== 'auto')
      throw new RequestError('group-by must be auto, workload or namespace');
    const namespace = c.req.query('namespace');
    const query = parsePort(c.req.query('port'));
    const graph = s.graph(query, groupBy, namespace);
    const observed =
      flows && c.req.query('flows') === '1'
        ? { observed: observedOnGraph(s, graph, flows.list(), query) }
        : {};
    if (c.req.query('svg') !== '1') return { ...graph, ...observed };
    return { ...graph, ...observed, svg: await s.graphSvg(graph) };
  });
  api('/api/flows', (s, c) => {
    if (!flows)
      return c.json(
        { error: 'serve was started without a flow source (--flows FILE, --agent URL or --lab NAME)' },
        404,
      );
    const filter = parseFlowFilter(new URL(c.req.url).searchParams);
    if ('error' in filter) throw new RequestError(filter.error);
    const limitText = c.req.query('limit');
    const limit = limitText === undefined || limitText === '' ? Infinity : Number(limitText);
    if (!(limit === Infinity || (Number.isInteger(limit) && limit > 0)))
      throw new RequestError(`limit must be a whole number above 0, not "${limitText}"`);
    const records = flows.list();
    const chosen = servedFlows(s, records, filter, c.req.query('q') ?? '');
    const answer: FlowsAnswer = {
      version: flows.version,
      source: flows.description,
      total: records.length,
      matched: chosen.length,
      flows: chosen.length > limit ? chosen.slice(0, limit) : chosen,
      problems: flows.problemList(),
      diagnostics: flows.diagnostics,
    };
    const body = JSON.stringify(answer);
    if (body.length > MAX_ANSWER_BYTES)
      return tooLarge(
        c,
        body.length,
        `${chosen.length} flows match: narrow them (verdict=, from=, to=, namespace=, port=, policy=, node=, q=) or ask for the first (limit=N)`,
      );
    return c.body(body, 200, { 'content-type': 'application/json' });
  });
  api('/api/lint', (s) => s.lint);
  api('/api/diagnostics', (s) => ({ diagnostics: s.input.diagnostics }));
  api('/api/diff', (s, c) => {
    const diff = s.diff;
    if (!diff)
      return c.json({ error: 'serve was started without --against: there is nothing to compare' }, 404);
    return diffJson(diff);
  });
  api('/api/object', (s, c) => {
    const name = c.req.query('name') ?? '';
    const found = s.source(name);
    return found ?? c.json({ error: `no object ${name} in the input` }, 404);
  });

  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      const send = (version: number): Promise<void> =>
        stream.writeSSE({ event: 'snapshot', data: JSON.stringify({ version } satisfies VersionEvent) });
      await live.first;
      await send(live.snapshot.version);
      let wake: (() => void) | undefined;
      let latest = live.snapshot.version;
      const unsubscribeInput = live.onChange((snapshot) => {
        latest = snapshot.version;
        wake?.();
      });
      // Observed flows change on their own: a `flows` event, the page reloads its flow views.
      let flowsLatest = flows?.version ?? 0;
      let flowsSent = flowsLatest;
      const unsubscribeFlows = flows?.onChange((version) => {
        flowsLatest = version;
        wake?.();
      });
      const unsubscribe = (): void => {
        unsubscribeInput();
        unsubscribeFlows?.();
      };
      stream.onAbort(() => {
        unsubscribe();
        wake?.();
      });
      let sent = latest;
      while (!stream.aborted && !stream.closed) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          // A comment line now and then keeps proxies and the browser from closing an idle stream.
          setTimeout(resolve, 15_000).unref();
        });
        wake = undefined;
        if (stream.aborted) break;
        let quiet = true;
        if (latest !== sent) {
          sent = latest;
          quiet = false;
          await send(latest);
        }
        if (flowsLatest !== flowsSent) {
          flowsSent = flowsLatest;
          quiet = false;
          await stream.writeSSE({
            event: 'flows',
            data: JSON.stringify({ version: flowsLatest } satisfies VersionEvent),
          });
        }
        if (quiet) await stream.write(': keep-alive\n\n');
      }
      unsubscribe();
    }),
  );
  return app;
}
