/**
 * `palisade diff -f OLD… --to NEW…`: the connections that differ between two inputs, and the
 * changed objects each comes from. Exit 1 when anything differs, so a CI step can fail on it.
 */
import { Command } from 'commander';
import {
  classDiff,
  diffConnectivity,
  type ClassDiff,
  type ConnectivityDiff,
} from '../../analysis/diff/index.ts';
import {
  DIFF_CLASS_FORMATS,
  DIFF_FORMATS,
  ENDPOINT_VIEWS,
  styleFor,
  type ClassDiffWriter,
} from '../../analysis/index.ts';
import { checkChoice, resolveInputOptions, withInputOptions } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

import { loadBoth, withSecondInput } from '../two-inputs.ts';
import { withHeapGrowingFreely } from '../heap.ts';
import { phases } from '../progress.ts';

/**
 * Lines past which `--by auto` groups them per class, when that at least halves them. Trying costs
 * a second, per-pod diff (as long again as the first): at 1,000 lines shape (a) ×1's busy pull
 * request (1,031 lines, which classes did not halve) took 46 s instead of 28. Ten thousand lines
 * (about a megabyte of text) is where a per-workload answer stops being read line by line.
 */
const CLASSES_FROM_LINES = 10_000;

export function diffCommand(io: CliIo, done: (code: number) => void): Command {
  return withSecondInput(withInputOptions(new Command('diff')), 'the new input')
    .description('connections that differ between two inputs (-f the old, --to the new), and why')
    .option('--no-addresses', 'leave out connections with addresses outside the cluster')
    .option(
      '--by <view>',
      "endpoints: workload (a workload's pods together, so a rollout's new pod names change nothing), pod (every pod), class (endpoints no policy tells apart in either input: a line per class pair, standing for every member pair) or auto (workload; class for text, md and csv past 10,000 lines when class lines are at most half of them)",
      'auto',
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
      const asked = checkChoice('--by', raw.by, [...ENDPOINT_VIEWS, 'class', 'auto'] as const);
      if (asked === 'class' && !DIFF_CLASS_FORMATS[format])
        throw new UsageError(
          `--by class writes ${Object.keys(DIFF_CLASS_FORMATS).join(', ')}, not ${format}`,
        );
      const { diff, classes, inputErrors } = await withHeapGrowingFreely(async () => {
        const { first: before, second: after, inputErrors } = await loadBoth(input, raw.to, io);
        const progress = phases(io);
        progress?.phase('comparing the two inputs');
        const compare = (by: 'workload' | 'pod'): ConnectivityDiff =>
          diffConnectivity(before.cluster, after.cluster, {
            semantics: input.semantics,
            addresses: raw.addresses !== false,
            by,
            ...(input.namespaces ? { namespaces: input.namespaces } : {}),
          });
        let diff = compare(asked === 'class' || asked === 'pod' ? 'pod' : 'workload');
        let classes: ClassDiff | undefined;
        if (asked === 'class') classes = classDiff(before.cluster, after.cluster, diff);
        else if (
          asked === 'auto' &&
          DIFF_CLASS_FORMATS[format] &&
          format !== 'json' &&
          diff.connections.length > CLASSES_FROM_LINES
        ) {
          // Many lines per workload: per class, when that says them in at most half as many.
          const grouped = classDiff(before.cluster, after.cluster, compare('pod'));
          if (grouped.diff.connections.length * 2 <= diff.connections.length) {
            io.stderr.write(
              `diff: ${diff.connections.length.toLocaleString('en-US')} connections differ between workloads; by classes of ` +
                `endpoints no policy tells apart they are ${grouped.diff.connections.length.toLocaleString('en-US')} lines ` +
                '(--by workload for one per workload pair)\n',
            );
            classes = grouped;
            diff = grouped.diff;
          }
        }
        progress?.finish();
        return { diff, classes, inputErrors };
      });
      const style = styleFor(io.stdoutIsTty, io.env);
      let out = '';
      if (classes) (DIFF_CLASS_FORMATS[format] as ClassDiffWriter)(classes, (chunk) => (out += chunk), style);
      else {
        const writer = DIFF_FORMATS[format];
        if (!writer) throw new Error(`no writer for ${format}`);
        await writer(diff, (chunk) => (out += chunk), style, { groupBy });
      }
      io.stdout.write(out);
      const differs =
        diff.connections.length > 0 || diff.endpoints.added.length + diff.endpoints.removed.length > 0;
      done(differs || inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}
