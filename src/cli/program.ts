/**
 * The command-line program: commands registered on one commander instance. Usage errors exit 2,
 * findings in the input exit 1, success 0. Nothing here prints a stack trace for user mistakes.
 */
import { Command, CommanderError } from 'commander';
import { checkCommand } from './commands/check.ts';
import { compileCommand } from './commands/compile.ts';
import { generateCommand } from './commands/generate.ts';
import { convertCommand } from './commands/convert.ts';
import { explainCommand } from './commands/explain.ts';
import { matrixCommand } from './commands/matrix.ts';
import { validateCommand } from './commands/validate.ts';
import { renderCommand } from './commands/render.ts';
import { labCommand } from './commands/lab.ts';
import { lintCommand } from './commands/lint.ts';
import { reflectCommand } from './commands/reflect.ts';
import { diffCommand } from './commands/diff.ts';
import { assertCommand } from './commands/assert.ts';
import { containsCommand, equivCommand, interferesCommand } from './commands/queries.ts';
import { serveCommand } from './commands/serve.ts';
import { agentCommand } from './commands/agent.ts';
import { statusCommand } from './commands/status.ts';
import { DataplaneError } from '../dataplane/index.ts';
import { LabError } from '../lab/index.ts';
import { VERSION } from './version.ts';
import { EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UnsupportedInputError, UsageError, type CliIo } from './io.ts';

export { VERSION } from './version.ts';

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = EXIT_OK;
  const done = (code: number): void => {
    exitCode = code;
  };
  const output = { writeOut: (s: string) => io.stdout.write(s), writeErr: (s: string) => io.stderr.write(s) };
  const program = new Command('palisade')
    .description('Kubernetes network policy: who can talk to whom, and why')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput(output)
    .exitOverride();
  for (const make of [
    checkCommand,
    matrixCommand,
    explainCommand,
    validateCommand,
    lintCommand,
    diffCommand,
    equivCommand,
    containsCommand,
    interferesCommand,
    assertCommand,
    serveCommand,
    convertCommand,
    compileCommand,
    generateCommand,
    renderCommand,
    labCommand,
    reflectCommand,
    agentCommand,
    statusCommand,
  ]) {
    // Subcommands do not inherit output and exit settings added after they were made.
    const command = make(io, done);
    // Subcommands (lab up, lab probe…) need the same settings: commander does not pass them down.
    for (const c of [command, ...command.commands])
      c.configureOutput(output).exitOverride().showHelpAfterError('(run with --help for usage)');
    program.addCommand(command);
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      const benign = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code);
      return benign ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`palisade: ${error.message}\n`);
      return EXIT_USAGE;
    }
    // The kernel or the lab refused: the tool's own message, one line or a few, no stack trace.
    if (
      error instanceof LabError ||
      error instanceof DataplaneError ||
      error instanceof UnsupportedInputError
    ) {
      io.stderr.write(`palisade: ${error.message}\n`);
      return EXIT_FINDINGS;
    }
    throw error;
  }
}
