/**
 * The JSON API of `palisade serve` on the shop example: the same data as the CLI's -o json,
 * the heatmap's counts, requests refused for a foreign Host or Origin (DNS rebinding) and for
 * anything but GET, and a file edit announced on the event stream within a second.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { serveCopy, type Served } from './helpers.ts';

/** A raw HTTP request, so Host and Origin can be anything. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('palisade serve: the API', () => {
  let served: Served;
  let base = '';
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(new URL(path, base));
    assert.equal(response.status, 200, `${path}: ${response.status}`);
    return (await response.json()) as T;
  };
  before(async () => {
    served = await serveCopy('examples/shop');
    base = served.server.url;
  });
  after(() => served.close());

  it('binds to loopback and lists its endpoints', async () => {
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const index = await get<{ endpoints: Record<string, string> }>('/api');
    assert.ok(Object.keys(index.endpoints).some((e) => e.startsWith('/api/heatmap')));
  });

  it('summary: counts and the ports the policies name', async () => {
    const summary = await get<{ namespaces: number; pods: number; workloads: number; ports: string[] }>(
      '/api/summary',
    );
    assert.equal(summary.namespaces, 4);
    assert.equal(summary.workloads, 6);
    assert.ok(summary.ports.includes('5432/TCP') || summary.ports.includes('postgres/TCP'));
  });

  it('heatmap: pod pairs allowed per namespace pair, then per workload, then per pod', async () => {
    type Map = {
      rows: { id: string; pods: number }[];
      columns: { id: string }[];
      cells: [number, number, number][];
    };
    const ns = await get<Map>('/api/heatmap?level=namespace&port=5432');
    const at = (m: Map, from: string, to: string): number => {
      const r = m.rows.findIndex((x) => x.id === from);
      const c = m.columns.findIndex((x) => x.id === to);
      assert.ok(r >= 0 && c >= 0, `${from} → ${to}`);
      return m.cells.find(([a, b]) => a === r && b === c)?.[2] ?? 0;
    };
    // Only api → db on 5432 in shop; nothing from payments.
    assert.equal(at(ns, 'shop', 'shop'), 1);
    assert.equal(at(ns, 'payments', 'shop'), 0);
    assert.equal(ns.rows.find((r) => r.id === 'shop')?.pods, 3);
    const wl = await get<Map>('/api/heatmap?level=workload&port=5432&from=shop&to=shop');
    assert.equal(at(wl, 'shop/api[Deployment]', 'shop/db[StatefulSet]'), 1);
    assert.equal(at(wl, 'shop/frontend[Deployment]', 'shop/db[StatefulSet]'), 0);
    const pods = await get<Map>(
      `/api/heatmap?level=pod&port=5432&from=${encodeURIComponent('shop/api[Deployment]')}&to=${encodeURIComponent('shop/db[StatefulSet]')}`,
    );
    assert.equal(pods.cells.length, 1);
    // Any port: the shop namespace reaches payments (gateway on 8443).
    const any = await get<Map>('/api/heatmap?level=namespace');
    assert.ok(at(any, 'shop', 'payments') > 0);
    assert.equal(at(any, 'payments', 'monitoring'), 0);
  });

  it('check, matrix and lint answer what the CLI prints with -o json', async () => {
    const from = 'shop/frontend[Deployment]';
    const to = 'shop/db[StatefulSet]';
    const check = await get<Record<string, unknown>>(
      `/api/check?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&port=5432`,
    );
    const { text, ...verdict } = check;
    assert.match(String(text), /DENIED/);
    const fromCli = await cli([
      'check',
      '-f',
      'examples/shop',
      '--from',
      from,
      '--to',
      to,
      '--port',
      '5432',
      '-o',
      'json',
    ]);
    assert.deepEqual(verdict, JSON.parse(fromCli.stdout));
    const matrix = await get<unknown>('/api/matrix?port=5432');
    assert.deepEqual(
      matrix,
      JSON.parse((await cli(['matrix', '-f', 'examples/shop', '--port', '5432', '-o', 'json'])).stdout),
    );
    const lint = await get<{ findings: { file: string }[] }>('/api/lint');
    const lintCli = JSON.parse(
      (await cli(['lint', '-f', 'examples/shop', '-o', 'json'])).stdout,
    ) as typeof lint;
    // The served input is a copy: the same findings, under the copy's file names.
    assert.deepEqual(
      lint.findings.map((f) => ({ ...f, file: f.file.replace(served.dir, 'examples/shop') })),
      lintCli.findings,
    );
  });

  it('object: the source of a policy an explanation names; bad requests are 400 with a message', async () => {
    const source = await get<{ file: string; line: number; yaml: string }>(
      `/api/object?name=${encodeURIComponent('NetworkPolicy shop/db')}`,
    );
    assert.equal(source.file, join(served.dir, 'policies-shop.yaml'));
    assert.ok(source.line > 1);
    assert.match(source.yaml, /name: db/);
    const missing = await fetch(new URL('/api/object?name=NetworkPolicy%20x/y', base));
    assert.equal(missing.status, 404);
    const bad = await fetch(new URL('/api/heatmap?port=99999', base));
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: string }).error, /between 1 and 65535/);
    // Ports read as the CLI reads them (analysis/port-query.ts): 53/UDP names its protocol.
    const check = `/api/check?from=${encodeURIComponent('shop/api[Deployment]')}&to=kube-system/coredns`;
    const udp = await get<{ protocol: string }>(`${check}&port=53/UDP`);
    assert.equal(udp.protocol, 'UDP');
    const clash = await fetch(new URL(`${check}&port=53/UDP&protocol=TCP`, base));
    assert.equal(clash.status, 400);
    assert.equal(
      ((await clash.json()) as { error: string }).error,
      'port 53/UDP says UDP but protocol says TCP',
    );
    // A name the destination has only on another protocol is refused as check refuses it.
    const named = await fetch(new URL(`${check}&port=dns`, base));
    assert.equal(named.status, 400);
    assert.equal(
      ((await named.json()) as { error: string }).error,
      'to: kube-system/coredns has no TCP container port named "dns" (it has one on UDP: port=dns/UDP)',
    );
    // With the protocol given apart, dns/UDP would contradict it: the hint changes the protocol.
    const namedTcp = await fetch(new URL(`${check}&port=dns&protocol=TCP`, base));
    assert.match(
      ((await namedTcp.json()) as { error: string }).error,
      /\(it has one on UDP: port=dns&protocol=UDP\)$/,
    );
    const followed = await get<{ protocol: string }>(`${check}&port=dns&protocol=UDP`);
    assert.equal(followed.protocol, 'UDP');
    // Two addresses of different families: refused as check refuses them, not answered DENIED.
    const families = ['10.0.0.1', 'fd00::1'] as const;
    const mixed = await fetch(
      new URL(`/api/check?from=${families[0]}&to=${encodeURIComponent(families[1])}&port=80`, base),
    );
    assert.equal(mixed.status, 400);
    const refused = await cli([
      'check',
      '-f',
      'examples/shop',
      '--from',
      families[0],
      '--to',
      families[1],
      '--port',
      '80',
    ]);
    assert.equal(refused.code, 2);
    assert.equal(
      ((await mixed.json()) as { error: string }).error,
      refused.stderr
        .trim()
        .replace(/^palisade: /, '')
        .replaceAll('--', ''),
    );
    const noDiff = await fetch(new URL('/api/diff', base));
    assert.equal(noDiff.status, 404);
  });

  it('refuses a foreign Host (DNS rebinding), a foreign Origin, and anything but GET; sends a CSP', async () => {
    const url = new URL('/api/summary', base);
    const port = url.port;
    const rebound = await raw(url.href, { headers: { host: `attacker.example:${port}` } });
    assert.equal(rebound.status, 421);
    // The page's document carries the first view's data: refused the same way.
    const reboundPage = await raw(base, { headers: { host: `attacker.example:${port}` } });
    assert.equal(reboundPage.status, 421);
    assert.doesNotMatch(reboundPage.body, /palisade-first-view/);
    const origin = await raw(url.href, { headers: { origin: 'http://attacker.example' } });
    assert.equal(origin.status, 403);
    const sameOrigin = await raw(url.href, { headers: { origin: `http://127.0.0.1:${port}` } });
    assert.equal(sameOrigin.status, 200);
    const localhost = await raw(url.href, { headers: { host: `localhost:${port}` } });
    assert.equal(localhost.status, 200);
    const post = await raw(url.href, { method: 'POST', headers: { 'content-type': 'application/json' } });
    assert.equal(post.status, 405);
    const page = await raw(base);
    assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
    assert.doesNotMatch(page.body, /https?:\/\//);
  });

  it('a file edit is announced on the event stream within a second', async () => {
    const controller = new AbortController();
    const response = await fetch(new URL('/api/events', base), { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const nextVersion = async (): Promise<number> => {
      for (;;) {
        const match = /event: snapshot\ndata: \{"version":(\d+)\}\n\n/.exec(buffer);
        if (match) {
          buffer = buffer.slice((match.index ?? 0) + match[0].length);
          return Number(match[1]);
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        buffer += decoder.decode(value, { stream: true });
      }
    };
    try {
      const first = await nextVersion();
      const file = join(served.dir, 'policies-shop.yaml');
      const edited = Date.now();
      writeFileSync(file, readFileSync(file, 'utf8').replace(/app: api/g, 'app: apix'));
      const second = await nextVersion();
      assert.equal(second, first + 1);
      assert.ok(Date.now() - edited < 1000, `${Date.now() - edited} ms`);
      // The API answers from the new snapshot: api no longer reaches db.
      const ns = await get<{ rows: { id: string }[]; cells: [number, number, number][] }>(
        '/api/heatmap?level=namespace&port=5432',
      );
      const shop = ns.rows.findIndex((r) => r.id === 'shop');
      assert.equal(
        ns.cells.find(([r, c]) => r === shop && c === shop),
        undefined,
      );
    } finally {
      controller.abort();
    }
  });
});
