/**
 * `palisade convert --to v1`: rewrites v1beta1-proposal input as equivalent v1 objects.
 */
import { Command } from 'commander';
import { stringify } from 'yaml';
import { convertToV1, convertToV1alpha2 } from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';

export function convertCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('convert'))
    .description(
      'rewrite objects as equivalent ones of a newer API: v1beta1-proposal input as v1 (--to v1), AdminNetworkPolicy and BaselineAdminNetworkPolicy as ClusterNetworkPolicy (--to v1alpha2)',
    )
    .requiredOption('--to <version>', 'target: v1 or v1alpha2')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action(async (raw: Record<string, unknown>) => {
      const to = checkChoice('--to', raw.to, ['v1', 'v1alpha2'] as const);
      const output = checkChoice('--output', raw.output, ['yaml', 'json'] as const);
      // The input is read with the semantics it was written for.
      const input = resolveInputOptions(to === 'v1' ? { ...raw, semantics: 'v1beta1-proposal' } : raw);
      const loaded = await loadInput(input, io);
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      const { objects, notes } =
        to === 'v1'
          ? convertToV1(loaded.rawObjects, loaded.cluster)
          : convertToV1alpha2(loaded.rawObjects, loaded.cluster);
      reportDiagnostics(notes, io, true);
      if (output === 'json') writeJson(io, { apiVersion: 'v1', kind: 'List', items: objects });
      else io.stdout.write(objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}
