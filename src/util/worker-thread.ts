/**
 * Starting a worker thread whose module sits beside the caller's, in the same form: TypeScript
 * under tsx (tests, development), or compiled JavaScript in the bundle (dist/bin, where every
 * entry point is one directory). Used by the reflector's encode pool and the file decoder's
 * offload.
 */
import { existsSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * The worker module `name` beside the module at `callerUrl`, or undefined when it is not
 * installed there (a single-file bundle). From the sources with the bundle `npm test` made once
 * (PALISADE_BUNDLE_DIR, scripts/test.mjs), the bundled worker instead: under tsx each worker
 * spent about a second of CPU registering tsx and compiling its modules again.
 */
export function workerScript(callerUrl: string, name: string): string | undefined {
  const here = fileURLToPath(callerUrl);
  const bundle = process.env.PALISADE_BUNDLE_DIR;
  if (extname(here) === '.ts' && bundle && existsSync(join(bundle, `${name}.js`)))
    return join(bundle, `${name}.js`);
  const script = join(dirname(here), `${name}${extname(here)}`);
  return existsSync(script) ? script : undefined;
}

/**
 * A worker running `script`. Under tsx the script is TypeScript and Node 20 does not run
 * `--import` hooks in worker threads (an inherited `--import tsx` even stops the worker), so the
 * worker registers tsx itself before importing the script.
 */
export function spawnWorker(script: string, workerData?: unknown): Worker {
  if (!script.endsWith('.ts')) return new Worker(script, { workerData });
  const url = JSON.stringify(pathToFileURL(script).href);
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${url}); });`;
  const execArgv = process.execArgv.filter(
    (arg, i, all) =>
      !(arg === 'tsx' && all[i - 1] === '--import') && !(arg === '--import' && all[i + 1] === 'tsx'),
  );
  return new Worker(bootstrap, { eval: true, execArgv, workerData });
}
