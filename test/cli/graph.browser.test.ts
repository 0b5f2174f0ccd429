/**
 * Graph outputs of `matrix` and `diff`: DOT, SVG laid out by Graphviz (WebAssembly), and one
 * self-contained HTML file, opened in headless Chromium with nothing but the file loaded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CHROMIUM_MISSING, launchChromium } from '../helpers/chromium.ts';
import { cli } from '../helpers/cli.ts';
import { drawingBoxes, inside, overlap, type Box } from '../serve/drawing-boxes.ts';

describe('graph outputs', () => {
  it('matrix -o dot: a node per workload in a box per namespace, edges with ports, outside ranges as nodes', async () => {
    const result = await cli(['matrix', '-f', 'examples/shop', '-o', 'dot']);
    assert.equal(result.code, 0);
    const dot = result.stdout;
    assert.match(dot, /"ep:shop\/frontend\[Deployment\]" \[id="n\d+", label="frontend\[Deployment\]"\]/);
    assert.match(
      dot,
      /"ep:shop\/frontend\[Deployment\]" -> "ep:shop\/api\[Deployment\]" \[id="e\d+", label="TCP 8000"\]/,
    );
    assert.match(dot, /"addr:\d+" \[id="n\d+", label="203\.0\.113\.0\/25", shape=note/);
    assert.match(dot, /"ep:payments\/gateway\[Deployment\]" -> "addr:\d+" \[id="e\d+", label="TCP 443"\]/);
    // No self loops per workload.
    assert.doesNotMatch(dot, /"ep:shop\/api\[Deployment\]" -> "ep:shop\/api\[Deployment\]"/);
  });

  it('matrix --group-by namespace: one node per namespace, with its own traffic as a loop', async () => {
    const dot = (await cli(['matrix', '-f', 'examples/shop', '-o', 'dot', '--group-by', 'namespace'])).stdout;
    assert.match(dot, /"ns:shop" \[id="n\d+", label="shop", shape=folder\]/);
    assert.match(dot, /"ns:shop" -> "ns:shop" \[id="e\d+", label="TCP 5432,8000"\]/);
    assert.match(dot, /"ns:shop" -> "ns:payments" \[id="e\d+", label="TCP 8443"\]/);
    assert.doesNotMatch(dot, /"ep:/);
  });

  it('matrix --port: edges name the allowed queried ports', async () => {
    const dot = (
      await cli(['matrix', '-f', 'examples/shop', '--port', '8000', '--port', '5432', '-o', 'dot'])
    ).stdout;
    assert.match(
      dot,
      /"ep:shop\/frontend\[Deployment\]" -> "ep:shop\/api\[Deployment\]" \[id="e\d+", label="TCP 8000"\]/,
    );
    assert.match(
      dot,
      /"ep:shop\/api\[Deployment\]" -> "ep:shop\/db\[StatefulSet\]" \[id="e\d+", label="TCP 5432"\]/,
    );
  });

  it('a cluster too large to draw per workload is drawn per namespace, brought to at most 150 nodes', async () => {
    const dir = mkdtempSync(join(tmpdir(), `palisade-graph-large-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    assert.equal((await cli(['generate', '--shape', 'a', '--scale', '0.01', '-o', dir])).code, 0);
    const result = await cli(['matrix', '-f', dir, '-o', 'dot']);
    assert.equal(result.code, 0, result.stderr);
    const nodes = result.stdout.split('\n').filter((l) => /^\s+"[^"]+" \[id="n\d+"/.test(l));
    assert.ok(nodes.length >= 1 && nodes.length <= 150, `${nodes.length} nodes`);
    assert.doesNotMatch(result.stdout, /"ep:/);
    // What was folded is said: 250 namespaces that connect alike are one node here.
    assert.match(result.stdout, /label="1000 endpoints by namespace; .*connect alike drawn as/);
    assert.match(result.stdout, /\(250 namespaces\)/);
  });

  it('a layout Graphviz would take minutes over is refused with what to ask instead, unless --force', async () => {
    // 150 workloads no policy isolates: every one reaches every other and the outside (one node):
    // 151 nodes, 22,650 edges.
    const dir = mkdtempSync(join(tmpdir(), `palisade-graph-open-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const pods = Array.from({ length: 150 }, (_, i) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `p${i}`, namespace: `ns${i % 10}`, labels: { app: `a${i}` } },
        spec: { containers: [] },
        status: { podIP: `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}` },
      }),
    );
    writeFileSync(join(dir, 'pods.yaml'), pods.join('\n---\n'));
    const refused = await cli(['matrix', '-f', dir, '-o', 'svg', '--group-by', 'workload']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /laying out 151 nodes and 22,650 edges would take Graphviz about \d+ min/);
    assert.match(refused.stderr, /--group-by namespace, --focus NS\/NAME/);
    assert.equal(refused.stdout, '');
    // Without --group-by, the picture is the namespaces': ten nodes, drawn.
    const drawn = await cli(['matrix', '-f', dir, '-o', 'dot']);
    assert.equal(drawn.code, 0, drawn.stderr);
    assert.match(drawn.stdout, /"ns:ns0" \[id="n\d+", label="ns0", shape=folder\]/);
  });

  it('-o svg: laid out by Graphviz', async () => {
    const svg = (await cli(['matrix', '-f', 'examples/shop', '-o', 'svg'])).stdout;
    assert.match(svg, /<svg width="\d+pt" height="\d+pt"/);
    assert.match(svg, /<title>ep:shop\/frontend\[Deployment\]&#45;&gt;ep:shop\/api\[Deployment\]<\/title>/);
    assert.ok(svg.includes('>TCP 8000</text>'));
  });

  it('-o html: one file that loads nothing else and shows the graph (headless Chromium)', async (t) => {
    const result = await cli([
      'diff',
      '-f',
      'examples/shop',
      '--to',
      'examples/shop/namespaces.yaml',
      'examples/shop/workloads.yaml',
      'examples/shop/policies-payments.yaml',
      'examples/shop-v2',
      '-o',
      'html',
    ]);
    const html = result.stdout;
    assert.match(html, /^<!doctype html>/);
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=|<img|@import|url\(/);
    if (CHROMIUM_MISSING) {
      t.skip(CHROMIUM_MISSING);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), `palisade-graph-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'diff.html');
    writeFileSync(file, html);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`file://${file}`);
      assert.deepEqual(requests, [`file://${file}`]);
      assert.deepEqual(errors, []);
      assert.equal(await page.locator('svg g.node').count(), 5);
      assert.equal(await page.locator('svg g.edge').count(), 3);
      assert.ok((await page.locator('svg').textContent())?.includes('+ TCP 5432'));
      // The pan-and-zoom script runs: a wheel turn scales the drawing.
      await page.mouse.move(200, 200);
      await page.mouse.wheel(0, -100);
      assert.match((await page.locator('#graph svg').getAttribute('style')) ?? '', /scale\(1\.1/);
    } finally {
      await browser.close();
    }
  });

  it('-o svg and -o html of the shop, in Chromium: namespace boxes apart, every label inside its shape, arrow labels apart', async (t) => {
    if (CHROMIUM_MISSING) {
      t.skip(CHROMIUM_MISSING);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), `palisade-graph-${process.pid}-`));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const browser = await launchChromium();
    try {
      for (const [format, root] of [
        ['svg', 'svg'],
        ['html', '#graph'],
      ] as const) {
        const result = await cli(['matrix', '-f', 'examples/shop', '-o', format]);
        assert.equal(result.code, 0, result.stderr);
        const file = join(dir, `shop.${format}`);
        writeFileSync(file, result.stdout);
        const page = await browser.newPage();
        await page.goto(`file://${file}`);
        const boxes = await drawingBoxes(page, root);
        assert.equal(boxes.clusters.length, 4, format);
        assert.ok(
          boxes.nodes.some((n) => n.title.startsWith('addr:')),
          `${format}: an address range drawn`,
        );
        for (let i = 0; i < boxes.clusters.length; i++)
          for (let j = i + 1; j < boxes.clusters.length; j++)
            assert.ok(
              !overlap(boxes.clusters[i] as Box, boxes.clusters[j] as Box),
              `${format}: boxes ${i} and ${j} overlap`,
            );
        for (const node of boxes.nodes)
          for (const text of node.texts)
            assert.ok(inside(text, node.shape), `${format}: ${node.title}: a label outside its shape`);
        for (let i = 0; i < boxes.edgeLabels.length; i++)
          for (let j = i + 1; j < boxes.edgeLabels.length; j++)
            assert.ok(
              !overlap(boxes.edgeLabels[i] as Box, boxes.edgeLabels[j] as Box),
              `${format}: arrow labels ${i} and ${j} collide`,
            );
        await page.close();
      }
    } finally {
      await browser.close();
    }
  });
});
