/**
 * `palisade explain`: per endpoint, in plain words, what is isolated and what is allowed.
 */
import { Command } from 'commander';
import type { Endpoint } from '../../model/types.ts';
import { explainEndpoints, findEndpoints, formatExplainText, styleFor } from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  notEvaluated,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { phases } from '../progress.ts';
import { refuseLargeOutput, resolveMaxOutput, sizeOfText, withOutputLimit } from '../output-limit.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function explainCommand(io: CliIo, done: (code: number) => void): Command {
  return withOutputLimit(withInputOptions(new Command('explain')))
    .description('what each endpoint lets in and out, and because of which policies')
    .option(
      '--pod <ns/name>',
      'only this pod or workload (ns/name or ns/name[Kind]; a workload lists its pods); repeatable',
      collect,
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const maxOutput = resolveMaxOutput(raw.maxOutput, raw.force);
      const namespaces = raw.namespace as string[] | undefined;
      const loaded = await loadInput(input, io, {
        rawObjects: false,
        podOption: (name) => `--pod ${name}`,
      });
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      let endpoints: readonly Endpoint[] = loaded.cluster.endpoints.filter(
        (e) => !namespaces || namespaces.includes(e.namespace),
      );
      const pods = raw.pod as string[] | undefined;
      if (pods) {
        endpoints = pods.flatMap((text) => {
          const found = findEndpoints(loaded.cluster.endpoints, text);
          if (typeof found === 'string') throw new UsageError(`--pod: ${found}`);
          return found.endpoints;
        });
      }
      const progress = phases(io);
      progress?.phase(`explaining ${endpoints.length.toLocaleString('en-US')} endpoints`);
      const explanations = explainEndpoints(
        loaded.cluster,
        endpoints,
        input.semantics,
        progress ? (done, total) => progress.update(done, total) : undefined,
      );
      progress?.finish();
      const missing = notEvaluated(loaded.cluster);
      const style = styleFor(io.stdoutIsTty, io.env);
      // Made whole, then measured: at 100,000 pods the text is 60 MB (its size follows the input's).
      const text =
        output === 'json'
          ? JSON.stringify(
              { endpoints: explanations, ...(missing ? { notEvaluated: missing.objects } : {}) },
              null,
              2,
            ) + '\n'
          : formatExplainText(explanations, style) +
            (missing ? style.warn(`note: ${missing.note}`) + '\n' : '');
      refuseLargeOutput(sizeOfText(text), maxOutput, ['--pod NS/NAME (one workload or pod)', '-n NAMESPACE']);
      io.stdout.write(text);
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}
