/**
 * `palisade validate`: every diagnostic for the input; exit 1 when any is an error.
 */
import { Command } from 'commander';
import { formatDiagnostics, styleFor, summarizeDiagnostics } from '../../analysis/index.ts';
import { hasErrors } from '../../model/diagnostics.ts';
import { checkChoice, loadInput, resolveInputOptions, withInputOptions, writeJson } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';
import { countObjects, objectsSummary } from './validate-summary.ts';

export function validateCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('validate'))
    .description('report every problem in the input, with file, line and column')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions({ ...raw, verbose: true });
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const loaded = await loadInput(input, io, { rawObjects: false });
      const { diagnostics, cluster } = loaded;
      const counts = countObjects(cluster);
      if (output === 'json') {
        writeJson(io, { diagnostics, objects: counts });
      } else {
        const style = styleFor(io.stdoutIsTty, io.env);
        for (const line of formatDiagnostics(diagnostics, style)) io.stdout.write(line + '\n');
        io.stdout.write(`${summarizeDiagnostics(diagnostics)}; ${objectsSummary(counts)}\n`);
      }
      done(hasErrors(diagnostics) ? EXIT_FINDINGS : EXIT_OK);
    });
}
