/**
 * The first view comes with the page's document (src/serve/page.ts): the page draws the
 * namespace heatmap without asking the API, and a string from the input that holds markup —
 * `</script>` in particular, which would end the JSON block — reaches the page as text, not as
 * markup, and the block still parses. In real headless Chromium; the server and the browser are
 * closed even when the test fails.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { loadCluster } from '../../src/ingest/index.ts';
import { startServer, type RunningServer } from '../../src/serve/index.ts';
import { jsonForScript } from '../../src/serve/page.ts';
import { CHROMIUM_MISSING, launchChromium } from './helpers.ts';

/** A name no validation would let through; an input from elsewhere (a cluster's API) might hold it. */
const EVIL = '</script><script>window.pwned=1</script><!--<script>';

describe('the first view embedded in the document', () => {
  it('is JSON that no string can end: <, > and & are escaped, and it reads back the same', () => {
    const value = { name: EVIL, other: 'a & b > c \u2028 d' };
    const text = jsonForScript(value);
    assert.doesNotMatch(text, /[<>&\u2028\u2029]/);
    assert.deepEqual(JSON.parse(text), value);
  });
});

describe('the first view in headless Chromium', { skip: CHROMIUM_MISSING }, () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const errors: string[] = [];

  before(async () => {
    // The shop example with the monitoring namespace renamed to markup.
    server = await startServer({
      read: async () => {
        const input = await loadCluster(['examples/shop'], {
          semantics: 'v1',
          maxFileBytes: 1 << 20,
          readStdin: () => Promise.resolve(''),
        });
        const endpoints = input.cluster.endpoints.map((e) =>
          e.namespace === 'monitoring' ? { ...e, namespace: EVIL, id: `${EVIL}/${e.name}` } : e,
        );
        return { ...input, cluster: { ...input.cluster, endpoints } };
      },
      watch: [],
      semantics: 'v1',
      address: '127.0.0.1',
      port: 0,
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('request', (request) => requests.push(new URL(request.url()).pathname));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('draws the heatmap without a request to the API; markup in a name is text', async () => {
    await page.goto(server.url);
    await page.waitForSelector('body[data-shown="1"]', { timeout: 10_000 });
    assert.deepEqual(
      requests.filter((path) => path === '/api/summary' || path === '/api/heatmap'),
      [],
      'the summary and the heatmap came with the document',
    );
    assert.match((await page.locator('header .counts').textContent()) ?? '', /4 namespaces · 6 workloads/);
    const labels = await page.locator('.row-label').allTextContents();
    assert.ok(labels.includes(EVIL), `the name is shown as written: ${JSON.stringify(labels)}`);
    assert.equal(await page.locator('.row-label script, .row-label img').count(), 0);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).pwned),
      undefined,
    );
    // The block was read and removed; the document holds nothing else the server sent as markup.
    assert.equal(await page.locator('#palisade-first-view').count(), 0);
    assert.deepEqual(errors, []);
  });

  it('a port in the address has its heatmap embedded; the page asks for other ports', async () => {
    requests.length = 0;
    await page.goto(`${server.url}?port=postgres/TCP`);
    await page.waitForSelector('body[data-shown="1"]', { timeout: 10_000 });
    assert.equal(await page.inputValue('select[name=port]'), 'postgres/TCP');
    assert.match((await page.locator('footer.status').textContent()) ?? '', /namespaces on postgres\/TCP/);
    assert.deepEqual(
      requests.filter((path) => path.startsWith('/api/') && path !== '/api/events'),
      [],
    );
    await page.selectOption('select[name=port]', 'any');
    await page.locator('footer.status', { hasText: 'namespaces on any' }).waitFor({ timeout: 10_000 });
    assert.deepEqual(
      requests.filter((path) => path === '/api/heatmap'),
      ['/api/heatmap'],
    );
  });
});
