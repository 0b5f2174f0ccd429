/**
 * `palisade convert --to v1`: rewrites v1beta1-proposal input as equivalent v1 objects (input
 * already written for v1 passes through); `--to v1alpha2`: AdminNetworkPolicy and
 * BaselineAdminNetworkPolicy as ClusterNetworkPolicy.
 */
import { Command } from 'commander';
import type { Semantics } from '../../model/types.ts';
import { semanticsDiagnostics } from '../../ingest/index.ts';
import { stringify } from 'yaml';
import { convertToV1, convertToV1alpha2, inferInputSemantics } from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function convertCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('convert'))
    .description(
      'rewrite objects as equivalent ones of a newer API: v1beta1-proposal input as v1 (--to v1), AdminNetworkPolicy and BaselineAdminNetworkPolicy as ClusterNetworkPolicy (--to v1alpha2)',
    )
    .requiredOption('--to <version>', 'target: v1 or v1alpha2')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .addHelpText(
      'after',
      '\n--semantics says what the input was written for (--to v1 only); without it, input using an\nextensions/v1beta1 NetworkPolicy or the DefaultDeny annotation is read as v1beta1-proposal,\nanything else as v1, which passes through unchanged.',
    )
    .action(async (raw: Record<string, unknown>, command: Command) => {
      const to = checkChoice('--to', raw.to, ['v1', 'v1alpha2'] as const);
      const output = checkChoice('--output', raw.output, ['yaml', 'json'] as const);
      const input = resolveInputOptions(raw);
      const explicit = command.getOptionValueSource('semantics') === 'cli';
      if (to === 'v1alpha2' && explicit)
        throw new UsageError(
          '--semantics applies to --to v1 (what the input was written for); --to v1alpha2 converts cluster policies, whatever the semantics',
        );
      // Read first, then judge: which semantics the input was written for decides the warnings.
      const loaded = await loadInput(input, io, { deferSemantics: true });
      const written: Semantics = explicit ? input.semantics : inferInputSemantics(loaded.rawObjects);
      const diagnostics = [...loaded.diagnostics, ...semanticsDiagnostics(loaded.cluster, written)];
      const inputErrors = reportDiagnostics(diagnostics, io, input.verbose);
      const { objects, notes } =
        to === 'v1'
          ? convertToV1(loaded.rawObjects, loaded.cluster, written)
          : convertToV1alpha2(loaded.rawObjects, loaded.cluster);
      reportDiagnostics(notes, io, true);
      if (output === 'json') writeJson(io, { apiVersion: 'v1', kind: 'List', items: objects });
      else io.stdout.write(objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}
