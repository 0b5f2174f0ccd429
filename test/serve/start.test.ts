/**
 * `serve` listens before it has read its input (the page and its bundle load meanwhile): the API
 * answers once the first reading is done, and a first reading that fails closes the server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadCluster } from '../../src/ingest/index.ts';
import { startServer } from '../../src/serve/index.ts';
import type { ServeOptions } from '../../src/serve/index.ts';

type Reader = ServeOptions['read'];

const options = (read: Reader): ServeOptions => ({
  read,
  watch: [],
  semantics: 'v1',
  address: '127.0.0.1',
  port: 0,
});

const readShop: Reader = () =>
  loadCluster(['examples/shop'], {
    semantics: 'v1',
    maxFileBytes: 1 << 20,
    readStdin: () => Promise.resolve(''),
  });

describe('serve: listening while the input is first read', () => {
  it('serves the page at once and answers the API when the reading is done', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let listening!: (url: string) => void;
    const heard = new Promise<string>((resolve) => (listening = resolve));
    const started = startServer(
      options(async () => {
        await gate;
        return readShop();
      }),
      listening,
    );
    const url = await heard;
    // The input is still being read: the document's head is there (the browser fetches the
    // bundle meanwhile), its first view and the summary wait for the reading.
    const page = await fetch(url);
    assert.equal(page.status, 200);
    const reader = (page.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let head = '';
    while (!head.includes('</head>')) {
      const { value, done } = await reader.read();
      assert.equal(done, false, 'the document ended before the input was read');
      head += decoder.decode(value, { stream: true });
    }
    assert.match(head, /<script type="module" src="\/assets\/app.js">/);
    let ended = false;
    const rest = (async () => {
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      ended = true;
      return text;
    })();
    let answered = false;
    const summary = fetch(`${url}api/summary`).then(async (r) => {
      answered = true;
      return (await r.json()) as { namespaces: number; version: number };
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(answered, false, 'the API answered before the input was read');
    assert.equal(ended, false, 'the document ended before the input was read');
    release();
    const server = await started;
    try {
      const body = await summary;
      assert.equal(body.version, 1);
      assert.equal(body.namespaces, 4);
      // The rest of the document: the first view's data, as the API answers it.
      const block = /<script type="application\/json" id="palisade-first-view">(.*?)<\/script>/s.exec(
        await rest,
      );
      assert.ok(block, 'the document embeds the first view');
      const first = JSON.parse(block[1] as string) as {
        summary: { version: number; namespaces: number };
        port: string;
        heatmap: { level: string; port: string; rows: { id: string }[] };
      };
      assert.deepEqual(first.summary, body);
      assert.equal(first.port, 'any');
      assert.equal(first.heatmap.level, 'namespace');
      assert.deepEqual(
        first.heatmap,
        await (await fetch(`${url}api/heatmap?level=namespace&port=any`)).json(),
      );
    } finally {
      await server.close();
    }
  });

  it('closes the server when the first reading fails', async () => {
    let address = '';
    await assert.rejects(
      startServer(
        options(() => Promise.reject(new Error('the cluster did not answer'))),
        (url) => (address = url),
      ),
      /the cluster did not answer/,
    );
    assert.notEqual(address, '');
    await assert.rejects(fetch(address), /fetch failed/);
  });
});
