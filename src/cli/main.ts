#!/usr/bin/env node
/**
 * The `palisade` executable. For very large compiles, NODE_OPTIONS=--max-semi-space-size=64 cuts
 * garbage-collection time by about a quarter (docs/BENCHMARKS.md); the flag cannot be set from
 * inside the process, and a shebang with arguments breaks `npx` for the root package.
 */
import { EXIT_INTERNAL, processIo } from './io.ts';
import { run } from './program.ts';

// A reader that stops early (`palisade matrix … | head`) closes the pipe: stop quietly, as
// command-line tools do, instead of dying on EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

run(process.argv.slice(2), processIo()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // Only a bug gets here; user mistakes are diagnostics or usage errors.
    process.stderr.write(
      `palisade: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = EXIT_INTERNAL;
  },
);
