/**
 * The page of `palisade serve` in real headless Chromium (playwright-core, Debian's chromium):
 * the shop example's heatmap shows the expected allowed and denied cells, drilling down reaches
 * a denied pod pair whose reason is shown, search filters rows, the diff view marks added and
 * removed connections, a file edit updates the page without a reload, and manifest strings
 * holding markup are shown as text. Screenshots of each view go to the test's temp dir, or to
 * docs/screenshots/ (linked from README) with PALISADE_SCREENSHOTS=1.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  CHROMIUM_MISSING,
  heatmapCellPoint,
  hoverHeatmapCell,
  launchChromium,
  serveCopy,
  type Served,
} from './helpers.ts';

const SHOTS = process.env.PALISADE_SCREENSHOTS ? 'docs/screenshots' : undefined;

describe('palisade serve: the page in headless Chromium', { skip: CHROMIUM_MISSING }, () => {
  let served: Served;
  let browser: Browser;
  let page: Page;
  let shots = '';
  const errors: string[] = [];
  const foreign: string[] = [];
  /** Paths the page asked this server for, in order. */
  const assets: string[] = [];

  before(async () => {
    // The input is the shop example; --against is its next release (so the diff has both kinds).
    served = await serveCopy('examples/shop', 'examples/shop', 'examples/shop-v2');
    shots = SHOTS ?? mkdtempSync(join(tmpdir(), `palisade-shots-${process.pid}-`));
    mkdirSync(shots, { recursive: true });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(served.server.url)) foreign.push(request.url());
      else assets.push(new URL(request.url()).pathname);
    });
  });
  after(async () => {
    await browser?.close();
    await served?.close();
    if (!SHOTS && shots) rmSync(shots, { recursive: true, force: true });
  });

  const cellPoint = (row: string, column: string) => heatmapCellPoint(page, row, column);
  const hover = (row: string, column: string) => hoverHeatmapCell(page, row, column);

  async function shown(version: number): Promise<void> {
    await page.waitForSelector(`body[data-shown="${version}"]`, { timeout: 10_000 });
  }

  it('loads the heatmap by namespace, allowed and denied cells as the matrix says', async () => {
    await page.goto(served.server.url);
    await shown(1);
    assert.match((await page.locator('header .counts').textContent()) ?? '', /4 namespaces · 6 workloads/);
    assert.match(
      await hover('shop', 'payments'),
      /^shop → payments: partly allowed \(\d+ of \d+ pod pairs\) on any$/,
    );
    assert.match(await hover('payments', 'monitoring'), /^payments → monitoring: denied/);
    // The graph library is not part of the first page: it loads with the graph tab.
    assert.deepEqual(assets.filter((a) => a.startsWith('/assets/')).sort(), [
      '/assets/app.css',
      '/assets/app.js',
    ]);
    await page.screenshot({ path: join(shots, 'heatmap.png') });
  });

  it('drills down to workloads and pods; a denied pod pair shows the reason', async () => {
    await page.selectOption('select[name=port]', 'postgres/TCP');
    await shown(1);
    const { x, y } = await cellPoint('shop', 'shop');
    await page.mouse.click(x, y);
    await page.waitForSelector('.crumbs .current:text("shop → shop")');
    assert.match(await hover('api[Deployment]', 'db[StatefulSet]'), /allowed \(1 of 1 pod pairs\)/);
    assert.match(await hover('frontend[Deployment]', 'db[StatefulSet]'), /denied/);
    await page.screenshot({ path: join(shots, 'workloads.png') });
    const point = await cellPoint('frontend[Deployment]', 'db[StatefulSet]');
    await page.mouse.click(point.x, point.y);
    await page.waitForSelector('.crumbs .current:text("frontend[Deployment] → db[StatefulSet]")');
    const pod = await page.locator('.row-label').first().textContent();
    const target = await page.locator('.column-label').first().textContent();
    const cell = await cellPoint(pod ?? '', target ?? '');
    await page.mouse.click(cell.x, cell.y);
    const verdict = page.locator('.details .verdict');
    await verdict.waitFor();
    assert.equal(await verdict.textContent(), 'DENIED on TCP/5432 (postgres)');
    assert.match((await page.locator('.details').textContent()) ?? '', /no rule allows/);
    await page.screenshot({ path: join(shots, 'explanation.png') });
    // A policy named in the explanation links to its source.
    await page.locator('.details button.object', { hasText: 'shop/db' }).first().click();
    await page.waitForSelector('.details .location');
    assert.match(
      (await page.locator('.details .location').textContent()) ?? '',
      /policies-shop\.yaml:\d+:\d+$/,
    );
    await page.screenshot({ path: join(shots, 'source.png') });
  });

  it('search filters the rows', async () => {
    const top = page.locator('.crumbs button', { hasText: 'All namespaces' });
    if (await top.count()) await top.click();
    await page.waitForSelector('.crumbs .current:text("All namespaces")');
    assert.equal(await page.locator('.row-label').count(), 4);
    await page.fill('input[name=search]', 'pay');
    await until(async () => (await page.locator('.row-label').count()) === 1);
    assert.equal(await page.locator('.row-label').textContent(), 'payments');
    await page.fill('input[name=search]', '');
    await until(async () => (await page.locator('.row-label').count()) === 4);
  });

  it('the graph draws workloads in namespaces with cytoscape', async () => {
    await page.click('.details .close');
    await page.selectOption('select[name=port]', 'any');
    await page.click('.tabs button[data-tab=graph]');
    await page.waitForSelector('.cy canvas');
    assert.equal(assets.filter((a) => /^\/assets\/chunk-[\w-]+\.js$/.test(a)).length, 1);
    assert.match(
      (await page.locator('.graph .caption').textContent()) ?? '',
      /^\d+ workloads and address ranges, \d+ allowed connections/,
    );
    await page.screenshot({ path: join(shots, 'graph.png') });
  });

  it('clicking a graph edge (a real mouse click in Chromium) explains that connection', async () => {
    // Where cytoscape drew the frontend → api edge, in page coordinates: the library keeps its
    // instance on the container (`_cyreg`); the click itself goes through Chromium's input.
    const point = await page.evaluate(() => {
      // No DOM types in the tests' compilation: the little of it used here, typed by hand.
      interface Edge {
        data(key: string): unknown;
        renderedMidpoint(): { x: number; y: number };
      }
      interface Container {
        _cyreg?: { cy?: { edges(): { toArray(): Edge[] } } };
        getBoundingClientRect(): { left: number; top: number };
      }
      const { document } = globalThis as unknown as {
        document: { querySelector(selector: string): Container | null };
      };
      const container = document.querySelector('.cy');
      const edge = container?._cyreg?.cy
        ?.edges()
        .toArray()
        .find(
          (e) =>
            e.data('source') === 'ep:shop/frontend[Deployment]' &&
            e.data('target') === 'ep:shop/api[Deployment]',
        );
      if (!container || !edge) return undefined;
      const box = container.getBoundingClientRect();
      const mid = edge.renderedMidpoint();
      return { x: box.left + mid.x, y: box.top + mid.y, label: String(edge.data('label')) };
    });
    assert.ok(point, 'the graph has a frontend → api edge');
    assert.equal(point.label, 'TCP 8000');
    await page.mouse.click(point.x, point.y);
    const verdict = page.locator('.details .verdict');
    await verdict.waitFor();
    assert.equal(await verdict.textContent(), 'ALLOWED on TCP/8000');
    const details = (await page.locator('.details').textContent()) ?? '';
    assert.match(details, /^×shop\/frontend → shop\/apiALLOWED on TCP\/8000/);
    assert.match(details, /allowed by shop\/api ingress\[0\]/);
    await page.screenshot({ path: join(shots, 'graph-edge.png') });
    await page.click('.details .close');
  });

  it('the diff view marks added and removed connections', async () => {
    await page.click('.tabs button[data-tab=diff]');
    await page.waitForSelector('.diff tr[data-change]');
    assert.ok((await page.locator('.diff tr[data-change=added]').count()) > 0);
    assert.ok((await page.locator('.diff tr[data-change=removed]').count()) > 0);
    assert.match((await page.locator('.diff .caption').textContent()) ?? '', /added, \d+ removed/);
    await page.screenshot({ path: join(shots, 'diff.png') });
  });

  it('a file edit updates the page without a reload; markup in manifests is shown as text', async () => {
    await page.click('.tabs button[data-tab=lint]');
    await page.waitForSelector('.lint table');
    const marker = await page.evaluate(
      () => ((globalThis as unknown as Record<string, unknown>).marker = 42),
    );
    // A policy whose annotation and (invalid) selector value hold markup.
    const evil = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>';
    writeFileSync(
      join(served.dir, 'evil.yaml'),
      [
        'apiVersion: networking.k8s.io/v1',
        'kind: NetworkPolicy',
        'metadata:',
        '  name: evil',
        '  namespace: shop',
        `  annotations: {note: ${JSON.stringify(evil)}}`,
        'spec:',
        `  podSelector: {matchLabels: {app: ${JSON.stringify(evil)}}}`,
        '  ingress: [{}]',
        '',
      ].join('\n'),
    );
    await shown(2);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).marker),
      marker,
    );
    const text = (await page.locator('.lint').textContent()) ?? '';
    assert.ok(text.includes('<script>window.pwned=1</script>'), 'the value is shown as text');
    await page.locator('.lint button.object', { hasText: 'NetworkPolicy shop/evil' }).first().click();
    await page.waitForSelector('.details pre.yaml');
    assert.ok(
      ((await page.locator('.details pre.yaml').textContent()) ?? '').includes('onerror="window.pwned=1"'),
    );
    assert.equal(await page.locator('.details img, .lint img, .details script').count(), 0);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).pwned),
      undefined,
    );
    await page.screenshot({ path: join(shots, 'lint.png') });
    // Editing the policies changes the heatmap on the page.
    await page.click('.tabs button[data-tab=heatmap]');
    await page.selectOption('select[name=port]', 'postgres/TCP');
    await shown(2);
    const file = join(served.dir, 'policies-shop.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/app: api/g, 'app: apix'));
    await shown(3);
    assert.match(await hover('shop', 'shop'), /denied/);
  });

  it('loaded nothing from elsewhere and raised no error', () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(errors, []);
  });
});

/** Polls a condition of the page from here (the page's CSP refuses evaluated strings). */
async function until(check: () => Promise<boolean>, timeout = 10_000): Promise<void> {
  const end = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting for the page');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
