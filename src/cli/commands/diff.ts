/**
 * `palisade diff -f OLD… --to NEW…`: the connections that differ between two inputs, and the
 * changed objects each comes from. Exit 1 when anything differs, so a CI step can fail on it.
 */
import { Command } from 'commander';
import { diffConnectivity } from '../../analysis/diff/index.ts';
import { DIFF_FORMATS, ENDPOINT_VIEWS, styleFor } from '../../analysis/index.ts';
import { checkChoice, resolveInputOptions, withInputOptions } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';
import { loadBoth, withSecondInput } from '../two-inputs.ts';
import { withHeapGrowingFreely } from '../heap.ts';
import { phases } from '../progress.ts';

export function diffCommand(io: CliIo, done: (code: number) => void): Command {
  return withSecondInput(withInputOptions(new Command('diff')), 'the new input')
    .description('connections that differ between two inputs (-f the old, --to the new), and why')
    .option('--no-addresses', 'leave out connections with addresses outside the cluster')
    .option(
      '--by <view>',
      "endpoints: workload (a workload's pods together, so a rollout's new pod names change nothing) or pod (every pod)",
      'workload',
    )
    .option('-o, --output <format>', Object.keys(DIFF_FORMATS).join(', '), 'text')
    .option(
      '--group-by <what>',
      'graph outputs (dot, svg, html): one node per workload, or per namespace',
      'workload',
    )
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const format = checkChoice('--output', raw.output, Object.keys(DIFF_FORMATS));
      const groupBy = checkChoice('--group-by', raw.groupBy, ['workload', 'namespace'] as const);
      const by = checkChoice('--by', raw.by, ENDPOINT_VIEWS);
      const { diff, inputErrors } = await withHeapGrowingFreely(async () => {
        const { first: before, second: after, inputErrors } = await loadBoth(input, raw.to, io);
        const progress = phases(io);
        progress?.phase('comparing the two inputs');
        const diff = diffConnectivity(before.cluster, after.cluster, {
          semantics: input.semantics,
          addresses: raw.addresses !== false,
          by,
          ...(input.namespaces ? { namespaces: input.namespaces } : {}),
        });
        progress?.finish();
        return { diff, inputErrors };
      });
      const writer = DIFF_FORMATS[format];
      if (!writer) throw new Error(`no writer for ${format}`);
      let out = '';
      await writer(diff, (chunk) => (out += chunk), styleFor(io.stdoutIsTty, io.env), { groupBy });
      io.stdout.write(out);
      const differs =
        diff.connections.length > 0 || diff.endpoints.added.length + diff.endpoints.removed.length > 0;
      done(differs || inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}
