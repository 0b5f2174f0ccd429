/**
 * The command-line program: commands registered on one commander instance. Usage errors exit 2,
 * findings in the input exit 1, success 0. Nothing here prints a stack trace for user mistakes.
 *
 * Start-up is part of the interface (the CLI runs in loops and hooks), so nothing is loaded
 * before it is needed: a command's module — and with it the layers it uses — is imported only
 * when that command runs (all of them only for the help listing), and the error classes of the
 * dataplane and the lab only when an error has to be told apart. docs/ARCHITECTURE.md, "Start-up".
 */
import { Command, CommanderError } from 'commander';
import { VERSION } from './version.ts';
import { EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UnsupportedInputError, UsageError, type CliIo } from './io.ts';
import { escapeControls } from '../util/escape.ts';

export { VERSION } from './version.ts';

/** A command's definition: options resolved and validated in its action, which reports its exit code. */
type CommandDefinition = (io: CliIo, done: (code: number) => void) => Command;

/**
 * Every command, in help order, by name, with the import of its definition. A new command is one
 * line here (and its module under commands/); its heavy imports load only when it runs.
 */
const COMMANDS: readonly { readonly name: string; readonly load: () => Promise<CommandDefinition> }[] = [
  { name: 'check', load: async () => (await import('./commands/check.ts')).checkCommand },
  { name: 'matrix', load: async () => (await import('./commands/matrix.ts')).matrixCommand },
  { name: 'explain', load: async () => (await import('./commands/explain.ts')).explainCommand },
  { name: 'validate', load: async () => (await import('./commands/validate.ts')).validateCommand },
  { name: 'lint', load: async () => (await import('./commands/lint.ts')).lintCommand },
  { name: 'diff', load: async () => (await import('./commands/diff.ts')).diffCommand },
  { name: 'equiv', load: async () => (await import('./commands/queries.ts')).equivCommand },
  { name: 'contains', load: async () => (await import('./commands/queries.ts')).containsCommand },
  { name: 'interferes', load: async () => (await import('./commands/queries.ts')).interferesCommand },
  { name: 'assert', load: async () => (await import('./commands/assert.ts')).assertCommand },
  { name: 'suggest', load: async () => (await import('./commands/suggest.ts')).suggestCommand },
  { name: 'serve', load: async () => (await import('./commands/serve.ts')).serveCommand },
  { name: 'convert', load: async () => (await import('./commands/convert.ts')).convertCommand },
  { name: 'compile', load: async () => (await import('./commands/compile.ts')).compileCommand },
  { name: 'generate', load: async () => (await import('./commands/generate.ts')).generateCommand },
  { name: 'render', load: async () => (await import('./commands/render.ts')).renderCommand },
  { name: 'lab', load: async () => (await import('./commands/lab.ts')).labCommand },
  { name: 'reflect', load: async () => (await import('./commands/reflect.ts')).reflectCommand },
  { name: 'agent', load: async () => (await import('./commands/agent.ts')).agentCommand },
  { name: 'status', load: async () => (await import('./commands/status.ts')).statusCommand },
  { name: 'flows', load: async () => (await import('./commands/flows.ts')).flowsCommand },
];

/** The commands an argument list needs defined: the one it names, none for --version, else all. */
function commandsFor(argv: readonly string[]): typeof COMMANDS {
  const first = argv[0];
  const named = COMMANDS.find((c) => c.name === first);
  if (named) return [named];
  if (first === '--version' || first === '-V') return [];
  return COMMANDS;
}

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = EXIT_OK;
  const done = (code: number): void => {
    exitCode = code;
  };
  const output = {
    writeOut: (s: string) => io.stdout.write(s),
    writeErr: (s: string) => io.stderr.write(s),
    // Commander's usage errors start "error:"; every other message of the tool "palisade:".
    outputError: (s: string, write: (text: string) => void) => write(s.replace(/^error: /, 'palisade: ')),
  };
  const program = new Command('palisade')
    .description('Kubernetes network policy: who can talk to whom, and why')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput(output)
    .exitOverride();
  const definitions = await Promise.all(commandsFor(argv).map((c) => c.load()));
  for (const make of definitions) {
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
      // Messages may quote the input (an expectations file, a name): never raw control characters.
      io.stderr.write(`palisade: ${error.message.split('\n').map(escapeControls).join('\n')}\n`);
      return EXIT_USAGE;
    }
    // The kernel or the lab refused: the tool's own message, one line or a few, no stack trace.
    if (error instanceof UnsupportedInputError || (await isToolError(error))) {
      io.stderr.write(`palisade: ${(error as Error).message.split('\n').map(escapeControls).join('\n')}\n`);
      return EXIT_FINDINGS;
    }
    throw error;
  }
}

/** A refusal by the kernel's tools, the lab, etcd or a datapath (their layers are loaded only to tell). */
async function isToolError(error: unknown): Promise<boolean> {
  if (!(error instanceof Error)) return false;
  const [{ DataplaneError }, { LabError }, { EtcdAccessError }, { UnsupportedPolicyError }] =
    await Promise.all([
      import('../dataplane/index.ts'),
      import('../lab/index.ts'),
      import('../etcd/index.ts'),
      import('../configurator/types.ts'),
    ]);
  return (
    error instanceof DataplaneError ||
    error instanceof LabError ||
    error instanceof EtcdAccessError ||
    error instanceof UnsupportedPolicyError
  );
}
