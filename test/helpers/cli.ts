/**
 * Runs the CLI in-process with captured output.
 */
import { run } from '../../src/cli/program.ts';
import type { CliIo } from '../../src/cli/io.ts';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function cli(
  args: readonly string[],
  options: { stdin?: string; tty?: boolean; columns?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    stdoutIsTty: options.tty ?? false,
    stderrIsTty: options.tty ?? false,
    ...(options.columns !== undefined ? { stdoutColumns: options.columns } : {}),
    env: options.env ?? {},
    readStdin: () => Promise.resolve(options.stdin ?? ''),
  };
  const code = await run(args, io);
  return { code, stdout, stderr };
}
