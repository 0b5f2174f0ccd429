/**
 * The executable's body once it has to do more than print its version: EPIPE handling, the
 * program, and the exit code. main.ts imports it only then, so `--version` loads none of it.
 */
import { EXIT_INTERNAL, processIo } from './io.ts';
import { run } from './program.ts';

export function start(argv: readonly string[]): void {
  // A reader that stops early (`palisade matrix … | head`) closes the pipe: stop quietly, as
  // command-line tools do, instead of dying on EPIPE with a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }

  let settled = false;
  // Nothing left to wait for but the command has not finished: a promise it awaits will never
  // settle (a bug). Say so and fail, rather than exit 0 having printed nothing.
  process.once('beforeExit', () => {
    if (settled) return;
    process.stderr.write(
      'palisade: internal error: the command stopped before it finished (please report this)\n',
    );
    process.exitCode = EXIT_INTERNAL;
  });
  run(argv, processIo()).then(
    (code) => {
      settled = true;
      process.exitCode = code;
    },
    (error: unknown) => {
      settled = true;
      // Only a bug gets here; user mistakes are diagnostics or usage errors.
      process.stderr.write(
        `palisade: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = EXIT_INTERNAL;
    },
  );
}
