#!/usr/bin/env -S node --max-semi-space-size=64
/**
 * The `palisade` executable. A larger young generation (--max-semi-space-size) cuts garbage
 * collection time by about a quarter when compiling large clusters (docs/BENCHMARKS.md).
 */
import { processIo } from './io.ts';
import { run } from './program.ts';

run(process.argv.slice(2), processIo()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // Only a bug gets here; user mistakes are diagnostics or usage errors.
    process.stderr.write(
      `palisade: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 70;
  },
);
