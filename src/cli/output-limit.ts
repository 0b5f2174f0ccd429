/**
 * `--max-output SIZE` and `--force`: the limit above which a command does not write an output it
 * has estimated (default 100 MB), so no output of a large cluster — a matrix, every endpoint
 * explained, every lint finding, the compiled tables — fills a disk by surprise. Each command says
 * how to ask for less; the refusal is the same everywhere.
 */
import type { Command } from 'commander';
import { formatSize, parseSize, type OutputEstimate } from '../analysis/index.ts';
import { UsageError } from './io.ts';

const MAX_OUTPUT_HELP =
  'do not write an output estimated larger than this (100MB, 2GB, 500kB; 0 for no limit): say its size and how to ask for less instead';

/** The two options, as every command that can write a large output has them. */
export function withOutputLimit(command: Command): Command {
  return command
    .option('--max-output <size>', MAX_OUTPUT_HELP, '100MB')
    .option('--force', 'write the output whatever its size', false);
}

/** The limit in bytes (Infinity with --force or 0). */
export function resolveMaxOutput(raw: unknown, force: unknown): number {
  if (force === true) return Infinity;
  const text = typeof raw === 'string' ? raw : '100MB';
  const bytes = parseSize(text);
  if (bytes === undefined)
    throw new UsageError(`--max-output: "${text}" is not a size (such as 100MB or 2GB)`);
  return bytes === 0 ? Infinity : bytes;
}

/**
 * An output over `--max-output` is not written (unless `--force`): what it would be, and how to
 * ask for less (`less`: the options that would, each with a word of what it does). A usage error
 * (exit 2): the command as given asks for more than the limit.
 */
export function refuseLargeOutput(estimate: OutputEstimate, limit: number, less: readonly string[]): void {
  if (estimate.bytes <= limit) return;
  const size = `${estimate.atLeast ? 'more than' : 'about'} ${formatSize(estimate.bytes)}`;
  const lines = `${estimate.atLeast ? 'at least ' : ''}${estimate.lines.toLocaleString('en-US')} line${estimate.lines === 1 ? '' : 's'}`;
  throw new UsageError(
    `the output would be ${size} (${lines}), more than --max-output ${formatSize(limit)}; nothing was written. ` +
      `Ask for less — ${less.join(', ')} — or add --force to write it anyway`,
  );
}

/** The exact size of a text already made (an output of a size linear in the input's). */
export function sizeOfText(text: string): OutputEstimate {
  return { bytes: Buffer.byteLength(text), lines: newlines(text), atLeast: false };
}

/**
 * The size of a text written in pieces (`compile`'s streamed JSON), counted only up to the limit —
 * past it the estimate is "at least" — so an output under the limit is made twice at most, and one
 * over it is never made whole.
 */
export function sizeOfPieces(pieces: Iterable<string>, limit: number): OutputEstimate {
  let bytes = 0;
  let lines = 0;
  if (limit === Infinity) return { bytes, lines, atLeast: true };
  for (const piece of pieces) {
    bytes += Buffer.byteLength(piece);
    lines += newlines(piece);
    if (bytes > limit) return { bytes, lines, atLeast: true };
  }
  return { bytes, lines, atLeast: false };
}

function newlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
