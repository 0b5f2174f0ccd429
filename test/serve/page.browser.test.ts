/**
 * The page of `palisade serve` in real headless Chromium (playwright-core, Debian's chromium):
 * the shop example's heatmap shows the expected allowed and denied cells, drilling down reaches
 * a denied pod pair whose reason is shown, search filters rows, the diff view marks added and
 * removed connections, a file edit updates the page without a reload, and manifest strings
 * holding markup are shown as text. Screenshots of each view go to the test's temp dir, or to
 * docs/screenshots/ (shown in docs/commands/serve.md) with PALISADE_SCREENSHOTS=1.
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
  until,
  type Served,
} from './helpers.ts';
import { drawingBoxes, inside, overlap, type Box } from './drawing-boxes.ts';

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
    // The port's heatmap is drawn anew: wait for that drawing, not for the one before it (a
    // click on the old one was lost in a loaded CI run).
    await page
      .locator('body')
      .evaluate((body: { removeAttribute(name: string): void }) => body.removeAttribute('data-shown'));
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

  it('the graph is the Graphviz drawing: boxes apart, labels whole, arrow labels apart', async () => {
    await page.click('.details .close');
    await page.selectOption('select[name=port]', 'any');
    await page.click('.tabs button[data-tab=graph]');
    await page.waitForSelector('.drawing svg g.edge');
    assert.match(
      (await page.locator('.graph .caption').textContent()) ?? '',
      /^\d+ endpoints: \d+ nodes, \d+ allowed connections on any port\. Click an arrow to see why\./,
    );
    const boxes = await drawingBoxes(page);
    assert.equal(boxes.clusters.length, 4);
    assert.ok([...boxes.clusters, ...boxes.edgeLabels].every((b) => b.width > 0 && b.height > 0));
    // Namespace boxes never overlap.
    for (let i = 0; i < boxes.clusters.length; i++)
      for (let j = i + 1; j < boxes.clusters.length; j++)
        assert.ok(
          !overlap(boxes.clusters[i] as Box, boxes.clusters[j] as Box),
          `boxes ${i} and ${j} overlap`,
        );
    // Every node's text (the address ranges' two lines too) lies inside its shape.
    for (const node of boxes.nodes)
      for (const text of node.texts)
        assert.ok(inside(text, node.shape), `${node.title}: a label outside its shape`);
    // Arrow labels do not collide with each other.
    for (let i = 0; i < boxes.edgeLabels.length; i++)
      for (let j = i + 1; j < boxes.edgeLabels.length; j++)
        assert.ok(
          !overlap(boxes.edgeLabels[i] as Box, boxes.edgeLabels[j] as Box),
          `arrow labels ${i} and ${j} collide`,
        );
    assert.ok(boxes.nodes.some((n) => n.title === 'addr:0'));
    await page.screenshot({ path: join(shots, 'graph.png') });
  });

  it('clicking an arrow (a real mouse click in Chromium) says why for that connection', async () => {
    const label = page
      .locator('.drawing g.edge', {
        has: page.locator('title', { hasText: 'ep:shop/frontend[Deployment]->ep:shop/api[Deployment]' }),
      })
      .locator('text');
    assert.equal(await label.textContent(), 'TCP 8000');
    const box = await label.boundingBox();
    assert.ok(box);
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    const verdict = page.locator('.details .verdict');
    await verdict.waitFor();
    assert.equal(await verdict.textContent(), 'ALLOWED on TCP/8000');
    const details = (await page.locator('.details').textContent()) ?? '';
    assert.match(
      details,
      /One pod pair of shop\/frontend\[Deployment\] → shop\/api\[Deployment\] that may connect:/,
    );
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
