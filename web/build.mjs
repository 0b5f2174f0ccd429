/**
 * Bundles the web view (web/src/main.ts and its CSS) with esbuild: `node web/build.mjs` writes
 * dist/web/app.js, app.css and the chunks app.js imports when a view needs them (run by `npm run
 * build` and `prepare`); `serve` run from the sources calls buildWeb({ write: false }) and keeps
 * the bundle in memory.
 */
import { build } from 'esbuild';
import { rm } from 'node:fs/promises';
import process from 'node:process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** Returns { 'app.js': text, 'app.css': text }; with write, also writes them to dist/web/. */
export async function buildWeb({ write }) {
  // Chunk names change with their content: an earlier build's would stay behind.
  if (write) await rm(join(root, 'dist', 'web'), { recursive: true, force: true });
  const result = await build({
    entryPoints: { app: join(root, 'web', 'src', 'main.ts') },
    bundle: true,
    format: 'esm',
    // Code only one view uses loads when that view first opens.
    splitting: true,
    chunkNames: 'chunk-[hash]',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'eof',
    outdir: join(root, 'dist', 'web'),
    write,
    logLevel: 'warning',
  });
  const files = {};
  for (const file of result.outputFiles ?? [])
    files[file.path.slice(file.path.lastIndexOf('/') + 1)] = file.text;
  return files;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildWeb({ write: true });
