/**
 * `--max-output SIZE` and `--force`: the limit above which a command does not write an output it
 * has estimated (default 100 MB), so a matrix of a large cluster never fills a disk by surprise.
 */
import { parseSize } from '../analysis/index.ts';
import { UsageError } from './io.ts';

export const MAX_OUTPUT_HELP =
  'do not write an output estimated larger than this (100MB, 2GB, 500kB; 0 for no limit): say its size and how to ask for less instead';

/** The limit in bytes (Infinity with --force or 0). */
export function resolveMaxOutput(raw: unknown, force: unknown): number {
  if (force === true) return Infinity;
  const text = typeof raw === 'string' ? raw : '100MB';
  const bytes = parseSize(text);
  if (bytes === undefined)
    throw new UsageError(`--max-output: "${text}" is not a size (such as 100MB or 2GB)`);
  return bytes === 0 ? Infinity : bytes;
}
