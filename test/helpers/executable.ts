/**
 * How tests start `palisade` as a process. `npm test` (scripts/test.mjs) bundles the entry points
 * once into PALISADE_BUNDLE_DIR, as `npm ci` bundles them into dist/bin/: a process started from
 * the bundle costs about 0.3 s of CPU, one started from the sources through tsx about 1.6 s
 * (tsx compiles every module in every process), and the suite starts hundreds. A test file run
 * on its own, without that directory, starts the sources through tsx.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const SOURCES = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/** Node's arguments that run `palisade`, before the command's own: `[...palisadeArgv(), 'check', …]`. */
export function palisadeArgv(): string[] {
  const bundle = process.env.PALISADE_BUNDLE_DIR;
  if (bundle && existsSync(join(bundle, 'palisade.js'))) return [join(bundle, 'palisade.js')];
  return ['--import', 'tsx', SOURCES];
}
