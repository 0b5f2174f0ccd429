/**
 * Running the kernel's tools (`nft`, `ip`, `sysctl`) as child processes, optionally inside a
 * named network namespace (`ip netns exec`). Failures come back as values with the tool's own
 * message, never as thrown stack traces: callers decide how to report them.
 */
import { spawn, spawnSync } from 'node:child_process';

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ExecOptions {
  /** Run inside this named network namespace. */
  readonly netns?: string;
  readonly input?: string;
}

/** The command line, prefixed with `ip netns exec NAME` to run inside a network namespace. */
function commandLine(command: string, args: readonly string[], options: ExecOptions): string[] {
  return options.netns ? ['ip', 'netns', 'exec', options.netns, command, ...args] : [command, ...args];
}

/** Runs `command args…` and collects its output; a missing binary is exit code 127. */
export function run(
  command: string,
  args: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const argv = commandLine(command, args, options);
  return new Promise((resolve) => {
    const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error: NodeJS.ErrnoException) =>
      resolve({
        code: error.code === 'ENOENT' ? 127 : 1,
        stdout: '',
        stderr: `${argv[0]}: ${error.message}`,
      }),
    );
    child.on('close', (code) =>
      resolve({
        code: code ?? 1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    // A child that exits before reading its input must not crash us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The same, synchronously: for transactions that must finish before the caller goes on. */
export function runSync(command: string, args: readonly string[], options: ExecOptions = {}): ExecResult {
  const argv = commandLine(command, args, options);
  const result = spawnSync(argv[0] as string, argv.slice(1), {
    input: options.input ?? '',
    encoding: 'utf8',
    maxBuffer: 1024 * 1024 * 1024,
  });
  if (result.error) {
    const code = (result.error as NodeJS.ErrnoException).code === 'ENOENT' ? 127 : 1;
    return { code, stdout: '', stderr: `${argv[0]}: ${result.error.message}` };
  }
  return { code: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

/** Runs a command and throws a DataplaneError (one line, the tool's message) when it fails. */
export async function runChecked(
  command: string,
  args: readonly string[],
  options: ExecOptions = {},
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    const where = options.netns ? ` (in network namespace ${options.netns})` : '';
    const message = result.stderr.trim() || `exit code ${result.code}`;
    throw new DataplaneError(`${command} ${args.join(' ')}${where} failed: ${message}`);
  }
  return result.stdout;
}

/** A kernel tool refused an operation; the message is the tool's own, ready to show to users. */
export class DataplaneError extends Error {}

/** Whether this process may change network namespaces and the kernel's tables. */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}
