/**
 * `palisade serve` on shape (a) ×0.1 — 2,500 namespaces, 10,000 pods, 7,500 policies — in
 * headless Chromium: the first view is drawn from the document, a cell says why in one click, the
 * graph is a readable picture (namespaces, brought to at most 150 nodes, drawn by Graphviz), and no
 * answer of the API is larger than 10 MB (the workload matrix is refused with what to ask for).
 * Screenshots go to the test's temp dir, or to docs/screenshots/ with PALISADE_SCREENSHOTS=1.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { generateShape } from '../../src/generate/shapes.ts';
import { CHROMIUM_MISSING, heatmapCellAt, launchChromium, serveCopy, type Served } from './helpers.ts';
import { drawingBoxes, inside } from './drawing-boxes.ts';

const SHOTS = process.env.PALISADE_SCREENSHOTS ? 'docs/screenshots' : undefined;
const LIMIT = 10_000_000;

describe(
  'palisade serve at shape (a) ×0.1, in headless Chromium',
  { skip: CHROMIUM_MISSING ?? false },
  () => {
    let served: Served;
    let browser: Browser;
    let page: Page;
    let shots = '';
    const input = mkdtempSync(join(tmpdir(), `palisade-scale-page-${process.pid}-`));
    const sizes = new Map<string, number>();

    before(async () => {
      const shape = generateShape('a', { scale: 0.1, seed: 1 });
      const text = (objects: readonly object[]): string =>
        objects.map((o) => JSON.stringify(o)).join('\n---\n');
      writeFileSync(join(input, 'namespaces.yaml'), text(shape.namespaces));
      writeFileSync(join(input, 'pods.yaml'), text(shape.pods));
      writeFileSync(join(input, 'policies.yaml'), text(shape.policies));
      served = await serveCopy(input);
      shots = SHOTS ?? mkdtempSync(join(tmpdir(), `palisade-scale-shots-${process.pid}-`));
      mkdirSync(shots, { recursive: true });
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      page.on('response', (response) => {
        void response
          .body()
          .then((body) =>
            sizes.set(new URL(response.url()).pathname + new URL(response.url()).search, body.length),
          )
          .catch(() => undefined);
      });
    });
    after(async () => {
      await browser?.close();
      await served?.close();
      rmSync(input, { recursive: true, force: true });
      if (!SHOTS && shots) rmSync(shots, { recursive: true, force: true });
    });

    it('draws the namespace heatmap from the document, and says why for a cell in one click', async () => {
      await page.goto(served.server.url);
      await page.waitForSelector('body[data-shown="1"]', { timeout: 120_000 });
      assert.match((await page.locator('.heatmap .caption').textContent()) ?? '', /2,500 of 2,500 rows/);
      await page.screenshot({ path: join(shots, 'heatmap-large.png') });
      const { x, y } = await heatmapCellAt(page, 0, 1);
      await page.mouse.click(x, y);
      const verdict = page.locator('.details .verdict');
      await verdict.waitFor({ timeout: 60_000 });
      // Nothing connects in shape (a): a pod pair of the cell, denied, and why.
      assert.match((await verdict.textContent()) ?? '', /^DENIED on /);
      assert.match((await page.locator('.details').textContent()) ?? '', /One pod pair of ns-\d+ → ns-\d+:/);
      await page.screenshot({ path: join(shots, 'heatmap-large-why.png') });
      await page.click('.details .close', { timeout: 120_000 });
    });

    it('draws the graph as a readable picture of the namespaces', async () => {
      await page.click('.tabs button[data-tab=graph]', { timeout: 120_000 });
      await page.waitForSelector('.drawing svg g.node', { timeout: 120_000 });
      const nodes = await page.locator('.drawing g.node').count();
      assert.ok(nodes >= 1 && nodes <= 150, `${nodes} nodes`);
      assert.match((await page.locator('.graph .caption').textContent()) ?? '', /by namespace/);
      // Long labels ("ns-0, ns-1 and 2,498 more (2,500 namespaces)") stay inside their boxes,
      // whatever font the browser draws them in.
      for (const node of (await drawingBoxes(page)).nodes)
        for (const text of node.texts)
          assert.ok(inside(text, node.shape), `${node.title}: a label outside its shape`);
      await page.screenshot({ path: join(shots, 'graph-large.png') });
    });

    it('sends no answer over 10 MB: the matrix per workload is refused with what to ask for', async () => {
      const matrix = await fetch(`${served.server.url}api/matrix?by=workload`);
      assert.equal(matrix.status, 413);
      assert.match(((await matrix.json()) as { error: string }).error, /ask by=class/);
      const classes = await fetch(`${served.server.url}api/matrix?by=class&port=443/TCP`);
      assert.equal(classes.status, 200);
      assert.ok((await classes.text()).length < LIMIT);
      for (const path of ['api/summary', 'api/graph?group-by=auto', 'api/lint']) {
        const response = await fetch(`${served.server.url}${path}`);
        assert.equal(response.status, 200, path);
        assert.ok((await response.text()).length < LIMIT, path);
      }
      for (const [path, size] of sizes) assert.ok(size < LIMIT, `${path}: ${size} bytes`);
    });
  },
);
