/**
 * Commands that compare two inputs (`diff`, `equiv`, `contains`, `interferes`): `-f` is the first
 * (old) input — manifests, or a cluster with --kubeconfig — and `--to` the second (new), always
 * manifests; both are read the same way and their diagnostics reported.
 */
import type { Command } from 'commander';
import type { LoadResult } from '../ingest/types.ts';
import { loadInput, reportDiagnostics, type InputOptions } from './common.ts';
import { stdinNamedTwice } from './input-options.ts';
import { UsageError, type CliIo } from './io.ts';

export function withSecondInput(command: Command, what: string): Command {
  return command.requiredOption('--to <paths...>', `${what}: manifest files or directories`);
}

/** Both inputs, and whether either had errors. */
export async function loadBoth(
  input: InputOptions,
  second: unknown,
  io: CliIo,
): Promise<{ first: LoadResult; second: LoadResult; inputErrors: boolean }> {
  const stdin = stdinNamedTwice(['-f', input.file], ['--to', second as string[]]);
  if (stdin) throw new UsageError(stdin);
  // Only the clusters are compared: the files' text and parsed documents are not kept (at 100,000
  // pods, two inputs' worth of them doubled the heap every garbage collection walks).
  const first = await loadInput(input, io, { rawObjects: false });
  // The second input is files even when the first is a cluster (a change checked before applying it).
  const { cluster: _first, ...files } = input;
  const other = await loadInput({ ...files, file: second as string[] }, io, { rawObjects: false });
  const inputErrors = [
    reportDiagnostics(first.diagnostics, io, input.verbose),
    reportDiagnostics(other.diagnostics, io, input.verbose),
  ].some(Boolean);
  return { first, second: other, inputErrors };
}
