/**
 * The input options every analysis command takes (manifests with -f, or a live cluster:
 * --kubeconfig, --context, -A, -n; --semantics, --max-file-size, -v), defined on a command and
 * checked. Apart from common.ts, which reads the input: defining and checking options loads none
 * of the layers that read it.
 */
import type { Command } from 'commander';
import type { Semantics } from '../model/types.ts';
import { UsageError } from './io.ts';
import { resolveClusterInput, withClusterOptions, type ClusterInput } from './cluster-input.ts';

export interface InputOptions {
  /** Manifests (-f); empty when a cluster is the input. */
  readonly file: readonly string[];
  /** The cluster to read when no -f is given. */
  readonly cluster?: ClusterInput;
  /** -n: namespaces to read from a cluster, or whose endpoints to show from files (matrix, explain). */
  readonly namespaces?: readonly string[];
  readonly semantics: Semantics;
  readonly maxFileSize: number;
  readonly verbose: boolean;
}

const SEMANTICS: readonly Semantics[] = ['v1', 'v1beta1-proposal'];

/** Adds -f, --kubeconfig, --context, -A, -n, --semantics, --max-file-size and -v to a command. */
export function withInputOptions(command: Command): Command {
  return withClusterOptions(
    command.option(
      '-f, --file <paths...>',
      'manifest files or directories (recursive); - reads stdin (default: the cluster of the kubeconfig)',
    ),
  )
    .option('--semantics <name>', `policy semantics: ${SEMANTICS.join(' or ')}`, 'v1')
    .option('--max-file-size <MiB>', 'largest input file accepted, in MiB', '128')
    .option('-v, --verbose', 'also print info diagnostics (skipped kinds, implicit namespaces)', false);
}

/** Checks the raw commander values and returns typed options; every problem is one line. */
export function resolveInputOptions(raw: Record<string, unknown>): InputOptions {
  const problems: string[] = [];
  const semantics = SEMANTICS.find((s) => s === raw.semantics);
  if (!semantics)
    problems.push(`--semantics must be one of ${SEMANTICS.join(', ')}, not "${String(raw.semantics)}"`);
  const maxFileSize = Number(raw.maxFileSize);
  if (!Number.isFinite(maxFileSize) || maxFileSize <= 0)
    problems.push(`--max-file-size must be a positive number of MiB`);
  const file = (raw.file as string[] | undefined) ?? [];
  const stdin = stdinNamedTwice(['-f', file]);
  if (stdin) problems.push(stdin);
  if (problems.length) throw new UsageError(problems.join('\n'));
  const cluster = resolveClusterInput(raw);
  const namespaces = raw.namespace as string[] | undefined;
  return {
    file,
    ...(cluster ? { cluster } : {}),
    ...(namespaces?.length ? { namespaces } : {}),
    semantics: semantics as Semantics,
    maxFileSize,
    verbose: raw.verbose === true,
  };
}

export function checkChoice<T extends string>(flag: string, value: unknown, choices: readonly T[]): T {
  const found = choices.find((c) => c === value);
  if (!found) throw new UsageError(`${flag} must be one of ${choices.join(', ')}, not "${String(value)}"`);
  return found;
}

/**
 * Standard input (`-`) named more than once among the options that take paths (`-f`, `--to`,
 * `--against`), as a problem to refuse; undefined when it is named once or not at all. It can be
 * read only once: the second would read as an empty file.
 */
export function stdinNamedTwice(
  ...options: readonly (readonly [flag: string, paths: readonly string[]])[]
): string | undefined {
  const flags = options.flatMap(([flag, paths]) => paths.filter((path) => path === '-').map(() => flag));
  if (flags.length < 2) return undefined;
  const distinct = [...new Set(flags)];
  return distinct.length === 1
    ? `${distinct[0]} names - (standard input) ${flags.length === 2 ? 'twice' : `${flags.length} times`}; it can be read only once (name it once)`
    : `${distinct.join(' and ')} both name - (standard input); it can be read only once (save it to a file for one of them)`;
}
