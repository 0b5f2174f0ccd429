/**
 * serve's flow views in real headless Chromium (playwright-core, Debian's chromium), over a flow
 * file of the running shop's agents' records beside the same manifests: the Flows tab lists
 * them (verdict, ends, port, count, node, the deciding rule in check's words), filters by verdict
 * and by the search text, a click on a flow shows what `palisade check -o json` says about its
 * connection, the staged filter shows each would-verdict with its staged rule, the graph marks
 * the arrows that carried traffic and the nodes of denied flows (marked again, not redrawn, when
 * the flows change), markup in the file is shown as text, and an edited flow file updates the
 * page without a reload. Screenshots go to the test's
 * temp dir, or to docs/screenshots/ with PALISADE_SCREENSHOTS=1.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { FlowRecord } from '../../src/flows/index.ts';
import { cli } from '../helpers/cli.ts';
import { ndjson, serveShopFlows, SHOP_RUNNING, shopFlowRecords, type FlowServe } from './flow-fixture.ts';
import { CHROMIUM_MISSING, launchChromium, until } from './helpers.ts';

const SHOTS = process.env.PALISADE_SCREENSHOTS ? 'docs/screenshots' : undefined;

describe('palisade serve: the flow views in headless Chromium', { skip: CHROMIUM_MISSING }, () => {
  let served: FlowServe;
  let records: FlowRecord[];
  let browser: Browser;
  let page: Page;
  let shots = '';
  /** Screenshots looked at, not shown in docs/commands/serve.md: always the temp dir. */
  let scratch = '';
  const errors: string[] = [];

  before(async () => {
    records = await shopFlowRecords();
    served = await serveShopFlows(ndjson(records));
    shots = SHOTS ?? mkdtempSync(join(tmpdir(), `palisade-flow-shots-${process.pid}-`));
    mkdirSync(shots, { recursive: true });
    scratch = mkdtempSync(join(tmpdir(), `palisade-flow-scratch-${process.pid}-`));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('pageerror', (error) => errors.push(error.message));
  });
  after(async () => {
    await browser?.close();
    await served?.close();
    if (!SHOTS && shots) rmSync(shots, { recursive: true, force: true });
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const rows = () => page.locator('.flow-table tbody tr');

  it('the Flows tab lists every record with its deciding rule in check words', async () => {
    await page.goto(served.server.url);
    await page.waitForSelector('body[data-shown="1"]');
    await page.click('.tabs button[data-tab=flows]');
    await page.waitForSelector('.flow-table tbody tr');
    assert.equal(await rows().count(), records.length);
    assert.match(
      (await page.locator('.flows .caption').textContent()) ?? '',
      new RegExp(
        `^${records.length} of ${records.length} flows from .*flows\\.ndjson \\(113 connections\\)\\. Click a flow to see why\\.$`,
      ),
    );
    const row = rows().filter({ hasText: 'payments/gateway-6d4f-b7n3v' });
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual(cells.slice(0, 7), [
      'DENIED',
      'payments/gateway-6d4f-b7n3v',
      'shop/db-0',
      'TCP/5432',
      '2',
      'node-1',
      'egress: isolated by payments/gateway, no rule allows it',
    ]);
    await page.screenshot({ path: join(shots, 'flows.png') });
  });

  it('filters by verdict and by the search text', async () => {
    await page.selectOption('select[name=flow-verdict]', 'denied');
    await until(async () => (await rows().count()) === records.filter((r) => r.verdict === 'denied').length);
    assert.deepEqual(
      [...new Set(await page.locator('.flow-table tbody td.verdict').allTextContents())],
      ['DENIED'],
    );
    await page.selectOption('select[name=flow-verdict]', '');
    await page.fill('input[name=search]', 'prometheus');
    await until(async () => (await rows().count()) === 2);
    await page.fill('input[name=search]', '');
    await until(async () => (await rows().count()) === records.length);
  });

  it('a click on a flow shows what palisade check says about its connection', async () => {
    await rows().filter({ hasText: 'shop/frontend-7c9d-x2k4p' }).filter({ hasText: 'shop/db-0' }).click();
    const verdict = page.locator('.details > .verdict');
    await verdict.waitFor();
    const question = [
      'check',
      '-f',
      ...SHOP_RUNNING,
      '--from',
      'shop/frontend-7c9d-x2k4p',
      '--to',
      'shop/db-0',
      '--port',
      '5432',
    ];
    const check = JSON.parse((await cli([...question, '-o', 'json'])).stdout) as {
      verdict: { allowed: boolean; egress: { reason: string }; ingress: { reason: string } };
    };
    assert.equal(await verdict.textContent(), `${check.verdict.allowed ? 'ALLOWED' : 'DENIED'} on TCP/5432`);
    const sections = await page.locator('.details section.direction > p:first-of-type').allTextContents();
    assert.deepEqual(sections, [check.verdict.egress.reason, check.verdict.ingress.reason]);
    // And word for word what check prints.
    const text = await cli(question);
    assert.equal((await page.locator('.details details pre').textContent())?.trim(), text.stdout.trim());
    const details = (await page.locator('.details').textContent()) ?? '';
    assert.match(details, /Observed: DENIED ×3 on node-1/);
    assert.match(
      details,
      /egress: isolated by shop\/allow-dns, shop\/default-deny, shop\/frontend, no rule allows it/,
    );
    assert.doesNotMatch(details, /serve disagrees/);
    await page.screenshot({ path: join(shots, 'flow-explanation.png') });
    await page.click('.details .close');
  });

  it('the staged filter shows what applying the staged policies would break or open', async () => {
    await page.check('input[name=flow-staged]');
    await until(async () => (await page.locator('.flow-table tbody td.staged').count()) === 2);
    const staged = await page.locator('.flow-table tbody td.staged').allTextContents();
    assert.deepEqual(staged.sort(), [
      'would be allowed (egress: allowed by monitoring/prometheus-egress egress[0]; ingress: allowed by shop/db-from-monitoring ingress[0])',
      'would be denied (egress: isolated by monitoring/prometheus-egress, no rule allows it)',
    ]);
    await rows().filter({ hasText: 'would be allowed' }).click();
    await page.locator('.details .staged').waitFor();
    assert.equal(
      await page.locator('.details .staged').textContent(),
      'Staged: would be allowed (egress: allowed by monitoring/prometheus-egress egress[0]; ingress: allowed by shop/db-from-monitoring ingress[0])',
    );
    await page.screenshot({ path: join(scratch, 'flows-staged.png') });
    await page.click('.details .close');
    await page.uncheck('input[name=flow-staged]');
    await until(async () => (await rows().count()) === records.length);
  });

  it('the graph marks the arrows that carried traffic and the nodes of denied flows', async () => {
    await page.click('.tabs button[data-tab=graph]');
    await page.waitForSelector('.drawing svg g.edge.observed');
    const observed = page.locator('.drawing g.edge.observed', {
      has: page.locator('title', { hasText: 'ep:shop/api[Deployment]->ep:shop/db[StatefulSet]' }),
    });
    assert.equal(await observed.getAttribute('data-observed'), '80');
    const deniedNodes = await page.locator('.drawing g.node.flow-denied title').allTextContents();
    assert.ok(deniedNodes.includes('ep:shop/db[StatefulSet]'), deniedNodes.join(', '));
    assert.ok(deniedNodes.includes('ep:payments/gateway[Deployment]'), deniedNodes.join(', '));
    assert.match(
      (await page.locator('.graph .observed-caption').textContent()) ?? '',
      /Observed: \d+ arrows carried traffic \(drawn thick\); denied \(nodes outlined red\): .*shop\/frontend\[Deployment\] → shop\/db\[StatefulSet\] ×3/,
    );
    await page.screenshot({ path: join(shots, 'graph-flows.png') });
    // New flows mark the drawing shown (not drawn again: where the user panned stays).
    await page
      .locator('.drawing svg')
      .evaluate((svg) =>
        (svg as unknown as { setAttribute(name: string, value: string): void }).setAttribute(
          'data-marker',
          'kept',
        ),
      );
    const gateway = page.locator('.drawing g.node', {
      has: page.locator('title', { hasText: 'ep:payments/gateway[Deployment]' }),
    });
    writeFileSync(
      served.flowFile,
      ndjson(records.filter((r) => r.src.pod !== 'payments/gateway-6d4f-b7n3v')),
    );
    await until(async () => !((await gateway.getAttribute('class')) ?? '').includes('flow-denied'));
    assert.equal(await page.locator('.drawing svg').getAttribute('data-marker'), 'kept');
    assert.equal(await page.locator('.graph .observed-caption').count(), 1);
    writeFileSync(served.flowFile, ndjson(records));
    await until(async () => ((await gateway.getAttribute('class')) ?? '').includes('flow-denied'));
  });

  it('an edited flow file updates the page without a reload; markup in it is text', async () => {
    await page.click('.tabs button[data-tab=flows]');
    await page.waitForSelector('.flow-table tbody tr');
    const marker = await page.evaluate(() => ((globalThis as unknown as Record<string, unknown>).marker = 7));
    const evil = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>';
    const first = records[0] as FlowRecord;
    writeFileSync(
      served.flowFile,
      ndjson([...records, { ...first, port: 9999, node: evil }]) +
        `${JSON.stringify({ ...first, src: { ip: first.src.ip, pod: evil } })}\n`,
    );
    await until(async () => (await rows().count()) === records.length + 1);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).marker),
      marker,
    );
    const evilRow = rows().filter({ hasText: 'TCP/9999' });
    assert.equal((await evilRow.locator('td').nth(5).textContent()) ?? '', evil);
    assert.match((await page.locator('.flows .notes').textContent()) ?? '', /1 problems in the flow file/);
    assert.equal(await page.locator('.flows img, .flows script').count(), 0);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).pwned),
      undefined,
    );
    await page.screenshot({ path: join(scratch, 'flows-edited.png') });
  });

  it('raised no error on the page', () => {
    assert.deepEqual(errors, []);
  });
});
