/**
 * The CLI's view of the outside world, injected so tests run commands in-process.
 */
import { once } from 'node:events';
import { readStdin as readStdinUpTo } from '../ingest/index.ts';

export interface CliIo {
  /**
   * `write` returns false when the output is full (a pipe whose reader is behind); then
   * `drained`, when present, resolves once it has room again. Large outputs wait for it
   * (writeStreaming) instead of piling up in memory.
   */
  readonly stdout: { write(chunk: string): unknown; drained?(): Promise<void> };
  readonly stderr: { write(chunk: string): unknown };
  readonly stdoutIsTty: boolean;
  readonly stderrIsTty: boolean;
  /** Width of the terminal stdout is, when it is one. */
  readonly stdoutColumns?: number;
  readonly env: NodeJS.ProcessEnv;
  /** Standard input's text; undefined once it passes `maxBytes` (reading stops there). */
  readStdin(maxBytes?: number): Promise<string | undefined>;
}

/*
 * Exit codes, a contract (README "Exit codes"): a script must tell "the answer is not what I
 * expected" from "something in the input is wrong" — both were 1 (issue 19 §1.4).
 */
export const EXIT_OK = 0;
/** Findings or errors in the input (the answer is still given for what could be read). */
export const EXIT_FINDINGS = 1;
/** Bad command line. */
export const EXIT_USAGE = 2;
/** The answer differs from what `--expect` said it should be (whatever else the input holds). */
export const EXIT_EXPECTATION_FAILED = 3;
/** A bug in Palisade (an exception nobody expected); main.ts prints it and exits with this. */
export const EXIT_INTERNAL = 70;

/** A usage problem found after parsing (bad --from, unknown format...). */
export class UsageError extends Error {}

/** The input holds something this command cannot handle (yet): exit 1 with one line, never a wrong answer. */
export class UnsupportedInputError extends Error {}

export function processIo(): CliIo {
  return {
    stdout: {
      write: (chunk: string) => process.stdout.write(chunk),
      // Rejects if the stream fails meanwhile (main.ts ends the process quietly on EPIPE).
      drained: () => once(process.stdout, 'drain').then(() => undefined),
    },
    stderr: process.stderr,
    stdoutIsTty: process.stdout.isTTY === true,
    stderrIsTty: process.stderr.isTTY === true,
    ...(process.stdout.isTTY ? { stdoutColumns: process.stdout.columns } : {}),
    env: process.env,
    // A pipe larger than the limit is refused, not held (nor turned into a string too long for V8).
    readStdin: (maxBytes = Infinity) => readStdinUpTo(maxBytes),
  };
}

/** Below this, pieces are gathered before a write (one write per piece is slow). */
const WRITE_BATCH = 1 << 16;

/**
 * Writes pieces as they come, in batches of about 64 KiB, and waits whenever the output says
 * it is full: memory stays constant however large the output (a matrix of 10,000 endpoints).
 */
export async function writeStreaming(out: CliIo['stdout'], pieces: Iterable<string>): Promise<void> {
  let batch = '';
  for (const piece of pieces) {
    batch += piece;
    if (batch.length < WRITE_BATCH) continue;
    if (out.write(batch) === false && out.drained) await out.drained();
    batch = '';
  }
  if (batch.length > 0 && out.write(batch) === false && out.drained) await out.drained();
}
