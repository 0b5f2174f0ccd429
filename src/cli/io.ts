/**
 * The CLI's view of the outside world, injected so tests run commands in-process.
 */
export interface CliIo {
  readonly stdout: { write(chunk: string): unknown };
  readonly stderr: { write(chunk: string): unknown };
  readonly stdoutIsTty: boolean;
  readonly stderrIsTty: boolean;
  readonly env: NodeJS.ProcessEnv;
  readStdin(): Promise<string>;
}

export const EXIT_OK = 0;
/** Findings or errors in the input (or a failed `--expect`). */
export const EXIT_FINDINGS = 1;
/** Bad command line. */
export const EXIT_USAGE = 2;

/** A usage problem found after parsing (bad --from, unknown format...). */
export class UsageError extends Error {}

/** The input holds something this command cannot handle (yet): exit 1 with one line, never a wrong answer. */
export class UnsupportedInputError extends Error {}

export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdoutIsTty: process.stdout.isTTY === true,
    stderrIsTty: process.stderr.isTTY === true,
    env: process.env,
    async readStdin() {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}
