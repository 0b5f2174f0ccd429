/**
 * How the lab, running from its TypeScript sources (the tests), starts one of the executable's
 * entry points as a process: from the bundle `npm test` made once (PALISADE_BUNDLE_DIR,
 * scripts/test.mjs) when there is one — through tsx, each process would spend 0.4–1.6 s of CPU
 * compiling the sources again — else the source file through tsx. Built code starts the entry
 * point beside itself instead.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Node's arguments for `bundled` (e.g. `pod-agent.js`), whose source is `source`. */
export function sourceEntryCommand(bundled: string, source: string): string[] {
  const bundle = process.env.PALISADE_BUNDLE_DIR;
  if (bundle && existsSync(join(bundle, bundled))) return [join(bundle, bundled)];
  return ['--import', import.meta.resolve('tsx'), source];
}
