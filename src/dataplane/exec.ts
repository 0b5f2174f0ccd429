/**
 * Running the kernel's tools (`nft`, `ip`, `sysctl`) as child processes, optionally inside a
 * named network namespace (`ip netns exec`). Failures come back as values with the tool's own
 * message, never as thrown stack traces: callers decide how to report them.
 *
 * Every command has a deadline. Commands run under coreutils' `timeout`, which puts itself and
 * the command in a process group of their own and kills the whole group at the deadline — also
 * when this process has died in the meantime, so no `nft` is left behind holding a network
 * namespace's nftables lock. Arguments are passed as argv, never through a shell.
 */
import { spawn, spawnSync } from 'node:child_process';

interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The command did not finish before its deadline and was killed with its process group. */
  readonly timedOut?: boolean;
}

interface ExecOptions {
  /** Run inside this named network namespace. */
  readonly netns?: string;
  readonly input?: string;
  /** Deadline in milliseconds (default `DEFAULT_TIMEOUT_MS`); the process group is killed then. */
  readonly timeoutMs?: number;
}

/** How long a kernel tool may take unless told otherwise: far more than any healthy call. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** `timeout`'s exit status when the command was killed with SIGKILL (128 + 9). */
const KILLED = 137;

/** The command line, prefixed with `ip netns exec NAME` to run inside a network namespace. */
function commandLine(command: string, args: readonly string[], options: ExecOptions): string[] {
  return options.netns ? ['ip', 'netns', 'exec', options.netns, command, ...args] : [command, ...args];
}

/** The argv that runs a command line under `timeout` (SIGKILL to the whole group at the deadline). */
function underDeadline(argv: readonly string[], timeoutMs: number): string[] {
  return ['timeout', '--signal=KILL', `${(timeoutMs / 1000).toFixed(3)}s`, ...argv];
}

function deadlineOf(options: ExecOptions): number {
  return options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
}

function timedOutResult(
  argv: readonly string[],
  timeoutMs: number,
  stdout: string,
  stderr: string,
): ExecResult {
  return {
    code: KILLED,
    stdout,
    stderr: `${stderr}${argv[0]} did not finish within ${timeoutMs} ms and was killed with its process group`,
    timedOut: true,
  };
}

/** Runs `command args…` and collects its output; a missing binary is exit code 127. */
export function run(
  command: string,
  args: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const argv = commandLine(command, args, options);
  const timeoutMs = deadlineOf(options);
  const started = performance.now();
  return new Promise((resolve) => {
    const full = underDeadline(argv, timeoutMs);
    const child = spawn(full[0] as string, full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error: NodeJS.ErrnoException) =>
      resolve({
        code: error.code === 'ENOENT' ? 127 : 1,
        stdout: '',
        stderr: `${full[0]}: ${error.message}`,
      }),
    );
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      const status = code ?? (signal ? KILLED : 1);
      if (status === KILLED && performance.now() - started >= timeoutMs * 0.9)
        resolve(timedOutResult(argv, timeoutMs, stdout, stderr));
      else resolve({ code: status, stdout, stderr });
    });
    // A child that exits before reading its input must not crash us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The same, synchronously: for transactions that must finish before the caller goes on. */
export function runSync(command: string, args: readonly string[], options: ExecOptions = {}): ExecResult {
  const argv = commandLine(command, args, options);
  const timeoutMs = deadlineOf(options);
  const full = underDeadline(argv, timeoutMs);
  const started = performance.now();
  const result = spawnSync(full[0] as string, full.slice(1), {
    input: options.input ?? '',
    encoding: 'utf8',
    maxBuffer: 1024 * 1024 * 1024,
    // A backstop only: `timeout` kills the group first.
    timeout: timeoutMs + 5_000,
    killSignal: 'SIGKILL',
  });
  if (result.error) {
    const code = (result.error as NodeJS.ErrnoException).code === 'ENOENT' ? 127 : 1;
    if ((result.error as NodeJS.ErrnoException).code === 'ETIMEDOUT')
      return timedOutResult(argv, timeoutMs, result.stdout ?? '', result.stderr ?? '');
    return { code, stdout: '', stderr: `${full[0]}: ${result.error.message}` };
  }
  const status = result.status ?? (result.signal ? KILLED : 1);
  if (status === KILLED && performance.now() - started >= timeoutMs * 0.9)
    return timedOutResult(argv, timeoutMs, result.stdout, result.stderr);
  return { code: status, stdout: result.stdout, stderr: result.stderr };
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
export class DataplaneError extends Error {
  constructor(
    message: string,
    /**
     * Whether the operation may have taken effect anyway (the tool was killed, or its answer was
     * lost): the caller must read back what the kernel holds before relying on either outcome.
     */
    readonly uncertain = false,
  ) {
    super(message);
  }
}

/** Whether this process may change network namespaces and the kernel's tables. */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}
