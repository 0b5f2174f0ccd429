/**
 * `palisade serve --kubeconfig`: the view follows the cluster. The real command, as a process,
 * reads the fake API server (the list/watch protocol, the official client unmodified); a
 * NetworkPolicy deleted in the cluster is announced on the event stream the page listens to,
 * and the API answers from the new state — without a restart or a reload; in headless Chromium,
 * the page open on the heatmap shows the change without a reload. The process, the browser, the
 * fake server and the temp dir are removed even when the test fails.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { loadStore, readManifests, tempDir, writeKubeconfig } from '../fake-apiserver/fixtures.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { CHROMIUM_MISSING, hoverHeatmapCell, launchChromium } from './helpers.ts';

const SHOP = [
  ...readdirSync('examples/shop-running').map((f) => `examples/shop-running/${f}`),
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
];

/** Reads `event: snapshot` versions from the page's event stream. */
async function snapshotStream(url: URL, signal: AbortSignal): Promise<() => Promise<number>> {
  const response = await fetch(url, { signal });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return async () => {
    for (;;) {
      const match = /event: snapshot\ndata: \{"version":(\d+)\}\n\n/.exec(buffer);
      if (match) {
        buffer = buffer.slice(match.index + match[0].length);
        return Number(match[1]);
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('the event stream ended');
      buffer += decoder.decode(value, { stream: true });
    }
  };
}

describe('palisade serve --kubeconfig: live', () => {
  const temp = tempDir('serve-live');
  const server = new FakeApiServer({ token: 'live-token' });
  let child: ChildProcess | undefined;
  let base = '';

  before(async () => {
    const api = await server.start();
    loadStore(server.store, readManifests(SHOP));
    const kubeconfig = writeKubeconfig(temp.dir, 'config', { server: api, token: 'live-token' });
    const started = spawn(
      process.execPath,
      [...palisadeArgv(), 'serve', '--kubeconfig', kubeconfig, '--port', '0'],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KUBECONFIG: '', NO_COLOR: '1' } },
    );
    child = started;
    base = await new Promise<string>((resolve, reject) => {
      let text = '';
      started.stderr?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /palisade serve: (http:\/\/\S+)/.exec(text);
        if (match) resolve(match[1] as string);
      });
      started.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${text}`)));
    });
  });
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await server.stop();
    temp.cleanup();
  });

  async function shopToShop(): Promise<number | undefined> {
    const response = await fetch(new URL('/api/heatmap?level=namespace&port=5432', base));
    const heatmap = (await response.json()) as { rows: { id: string }[]; cells: [number, number, number][] };
    const shop = heatmap.rows.findIndex((r) => r.id === 'shop');
    return heatmap.cells.find(([r, c]) => r === shop && c === shop)?.[2];
  }

  it(
    'a policy deleted in the cluster is announced on the event stream, and the API answers from it',
    { timeout: 60_000 },
    async () => {
      const controller = new AbortController();
      try {
        const next = await snapshotStream(new URL('/api/events', base), controller.signal);
        let version = await next();
        // api → db on 5432 is allowed while shop/db's policy exists.
        assert.equal(await shopToShop(), 1);
        const deleted = Date.now();
        assert.ok(server.store.remove('NetworkPolicy', 'shop', 'db'));
        // Snapshots follow (one more may come from the watches' start); until one without the policy.
        for (;;) {
          const seen = await next();
          assert.ok(seen > version);
          version = seen;
          if ((await shopToShop()) === undefined) break;
        }
        process.stdout.write(`# deleted in the cluster → new snapshot: ${Date.now() - deleted} ms\n`);
        // And a policy created in the cluster brings it back.
        server.store.apply(
          readManifests(['examples/shop/policies-shop.yaml']).find(
            (o) => (o.metadata as { name?: string }).name === 'db',
          ) as Record<string, unknown>,
        );
        for (;;) {
          version = await next();
          if ((await shopToShop()) === 1) break;
        }
      } finally {
        controller.abort();
      }
    },
  );

  it(
    'the page follows the cluster: a policy deleted in the cluster changes the heatmap without a reload',
    { timeout: 60_000, skip: CHROMIUM_MISSING },
    async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        const errors: string[] = [];
        page.on('pageerror', (error) => errors.push(error.message));
        await page.goto(`${base}?port=5432`);
        await page.waitForSelector('body[data-shown]', { timeout: 10_000 });
        const shown = Number(await page.getAttribute('body', 'data-shown'));
        assert.match(await hoverHeatmapCell(page, 'shop', 'shop'), /^shop → shop: partly allowed/);
        // A value set on the page now is still there after the update: nothing reloaded it.
        await page.evaluate(() => ((globalThis as unknown as Record<string, unknown>).marker = 42));
        const deleted = Date.now();
        assert.ok(server.store.remove('NetworkPolicy', 'shop', 'db'));
        // New snapshots follow (the page may skip one); until the page shows api no longer reaching db.
        let tooltip = '';
        for (let seen = shown; ;) {
          const deadline = Date.now() + 10_000;
          let now = seen;
          while (now === seen) {
            assert.ok(Date.now() < deadline, `the page still shows snapshot ${seen}: ${tooltip}`);
            await new Promise((resolve) => setTimeout(resolve, 25));
            now = Number(await page.getAttribute('body', 'data-shown'));
          }
          seen = now;
          tooltip = await hoverHeatmapCell(page, 'shop', 'shop');
          if (/denied/.test(tooltip)) break;
        }
        process.stdout.write(`# deleted in the cluster → the page shows it: ${Date.now() - deleted} ms\n`);
        assert.match(tooltip, /^shop → shop: denied/);
        assert.equal(
          await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).marker),
          42,
        );
        assert.deepEqual(errors, []);
      } finally {
        await browser.close();
      }
    },
  );
});
