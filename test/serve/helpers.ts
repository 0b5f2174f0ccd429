/**
 * A `serve` of a copy of an example in a temp dir (so tests can edit it), headless Chromium
 * for the page tests — both removed after the test, even when it fails — and reading the
 * heatmap's cells on the page.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCluster } from '../../src/ingest/index.ts';
import { startServer, type RunningServer, type ServeOptions } from '../../src/serve/index.ts';

export { CHROMIUM_MISSING, launchChromium } from '../helpers/chromium.ts';

export interface Served {
  readonly server: RunningServer;
  /** The copy of the input being served. */
  readonly dir: string;
  /** The copy of the --against input, when one was given. */
  readonly againstDir?: string;
  close(): Promise<void>;
}

const read = (paths: string[]) => () =>
  loadCluster(paths, { semantics: 'v1', maxFileBytes: 128 << 20, readStdin: () => Promise.resolve('') });

/**
 * Serves a copy of `example` (and of `against`, with the files of `againstOverlay` copied over
 * it) on a free loopback port.
 */
export async function serveCopy(example: string, against?: string, againstOverlay?: string): Promise<Served> {
  const root = mkdtempSync(join(tmpdir(), `palisade-serve-${process.pid}-`));
  const dir = join(root, 'input');
  cpSync(example, dir, { recursive: true });
  let againstDir: string | undefined;
  if (against) {
    againstDir = join(root, 'against');
    cpSync(against, againstDir, { recursive: true });
    if (againstOverlay) cpSync(againstOverlay, againstDir, { recursive: true });
  }
  const { server, close } = await serveIn(root, {
    read: read([dir]),
    ...(againstDir ? { readAgainst: read([againstDir]) } : {}),
    watch: [dir, ...(againstDir ? [againstDir] : [])],
  });
  return { server, dir, ...(againstDir ? { againstDir } : {}), close };
}

/**
 * Serves on a free loopback port (v1 semantics, the rest of `options` as given); `close` stops
 * the server and removes `root`, which is removed also when the server does not start.
 */
export async function serveIn(
  root: string,
  options: Omit<ServeOptions, 'semantics' | 'address' | 'port'>,
): Promise<{ server: RunningServer; close: () => Promise<void> }> {
  try {
    const server = await startServer({ ...options, semantics: 'v1', address: '127.0.0.1', port: 0 });
    return {
      server,
      close: async () => {
        await server.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The centre of heatmap cell (row label, column label) in page coordinates. */
export async function heatmapCellPoint(
  page: Page,
  row: string,
  column: string,
): Promise<{ x: number; y: number }> {
  const k = Number(
    await page.locator('.row-label', { hasText: new RegExp(`^${escape(row)}$`) }).getAttribute('data-index'),
  );
  const c = Number(
    await page
      .locator('.column-label', { hasText: new RegExp(`^${escape(column)}$`) })
      .getAttribute('data-index'),
  );
  return heatmapCellAt(page, k, c);
}

/** The centre of the heatmap cell at (row, column), counted from 0, in page coordinates. */
export async function heatmapCellAt(
  page: Page,
  row: number,
  column: number,
): Promise<{ x: number; y: number }> {
  const canvas = page.locator('canvas.cells');
  const box = await canvas.boundingBox();
  assert.ok(box);
  const cell = Number(await canvas.getAttribute('data-cell'));
  const left = Number(await canvas.getAttribute('data-label-width'));
  const top = Number(await canvas.getAttribute('data-label-height'));
  return { x: box.x + left + (column + 0.5) * cell, y: box.y + top + (row + 0.5) * cell };
}

/** The tooltip of a heatmap cell, the mouse over it: `shop → payments: denied (…)`. */
export async function hoverHeatmapCell(page: Page, row: string, column: string): Promise<string> {
  const { x, y } = await heatmapCellPoint(page, row, column);
  await page.mouse.move(x, y);
  return (await page.locator('.tooltip').textContent()) ?? '';
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Polls a condition of the page from here (the page's CSP refuses evaluated strings). */
export async function until(check: () => Promise<boolean>, timeout = 10_000): Promise<void> {
  const end = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting for the page');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
