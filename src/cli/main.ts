#!/usr/bin/env node
/**
 * The `palisade` executable. For very large compiles, NODE_OPTIONS=--max-semi-space-size=64 cuts
 * garbage-collection time by about a quarter (docs/BENCHMARKS.md); the flag cannot be set from
 * inside the process, and a shebang with arguments breaks `npx` for the root package.
 */
import { VERSION } from './version.ts';

const argv = process.argv.slice(2);
// Scripts and hooks ask for the version more than for anything else: it is printed before
// commander and the program are loaded, so it costs little more than starting Node.
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
  process.stdout.write(`${VERSION}\n`);
} else {
  (await import('./start.ts')).start(argv);
}
