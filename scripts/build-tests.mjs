// Compiles the test files once for `npm test` (scripts/test.mjs), so that the test processes run
// JavaScript instead of loading tsx: through tsx, every test process spent ~0.4 s of CPU
// registering its loader (a hooks thread with esbuild in it) and resolved and transformed each of
// its ~150 modules one message at a time — about 0.5–1.9 s of CPU per file, ~70 s for the suite,
// before a test ran. Each test file becomes one ES module (shared code in chunks) beside the CLI
// bundle, with the same relative path (test/cli/cli.test.ts → <outdir>/test/cli/cli.test.mjs).
//
// What stays the same as under tsx: esbuild is also what tsx transforms with (same tsconfig);
// packages load from node_modules as before (left external); `import.meta.url`, `dirname` and
// `filename` name each module's own source file, so fixtures, goldens and the code that starts a
// source entry point (the lab, the reflector's workers) find what they found under tsx; function
// and class names are kept (keepNames), and stack traces map back to the sources
// (--enable-source-maps, set by scripts/test.mjs).
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');

/** `import.meta.url`, `.dirname` and `.filename` of each project module, as its source's. */
const sourceLocations = {
  name: 'source-locations',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      const text = await readFile(path, 'utf8');
      return {
        loader: 'ts',
        contents: text
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(path)))
          .replaceAll('import.meta.filename', JSON.stringify(path)),
      };
    });
  },
};

/**
 * Builds `files` (paths relative to the project root, `….test.ts`) into `outdir`; resolves with the
 * built paths, in the same order.
 */
export async function buildTests(files, outdir) {
  const out = (file) => file.replace(/\.ts$/, '');
  await build({
    absWorkingDir: root,
    entryPoints: files.map((file) => ({ in: file, out: out(file) })),
    outdir,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    keepNames: true,
    sourcemap: 'linked',
    logLevel: 'warning',
    plugins: [sourceLocations],
  });
  return files.map((file) => resolve(outdir, `${out(file)}.mjs`));
}
