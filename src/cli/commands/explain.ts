/**
 * `palisade explain`: per endpoint, in plain words, what is isolated and what is allowed — or,
 * at scale, per class of endpoints no policy tells apart (`--by class`), each explained once.
 */
import { Command } from 'commander';
import type { Endpoint } from '../../model/types.ts';
import {
  explainClasses,
  explainClassesJson,
  explainClassesOf,
  estimateExplainText,
  explainEndpoints,
  findEndpoints,
  formatExplainClassesText,
  formatExplainText,
  formatSize,
  styleFor,
  type ClassExplanations,
  notEvaluated,
} from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { phases } from '../progress.ts';
import { refuseLargeOutput, resolveMaxOutput, sizeOfText, withOutputLimit } from '../output-limit.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Endpoints past which `--by auto` explains classes, when classes are at most half of them (text). */
const CLASSES_FROM_ENDPOINTS = 1000;
const VIEWS = ['auto', 'endpoint', 'class'] as const;
const LESS = ['--pod NS/NAME (one workload or pod)', '-n NAMESPACE'];

export function explainCommand(io: CliIo, done: (code: number) => void): Command {
  return withOutputLimit(withInputOptions(new Command('explain')))
    .description('what each endpoint lets in and out, and because of which policies')
    .option(
      '--pod <ns/name>',
      'only this pod or workload (ns/name or ns/name[Kind]; a workload lists its pods); repeatable',
      collect,
    )
    .option(
      '--by <view>',
      'endpoint (each workload or pod of the input), class (endpoints no policy tells apart, each class explained once, its members named), or auto (endpoint; class for text past 1,000 endpoints when classes are at most half of them, or when the text per endpoint would pass --max-output and classes are fewer)',
      'auto',
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const asked = checkChoice('--by', raw.by, VIEWS);
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
      const missing = notEvaluated(loaded.cluster);
      const style = styleFor(io.stdoutIsTty, io.env);
      const note = missing ? style.warn(`note: ${missing.note}`) + '\n' : '';
      const progress = phases(io);
      const explainPerClass = (): ClassExplanations => {
        progress?.phase(`explaining ${endpoints.length.toLocaleString('en-US')} endpoints per class`);
        const explained = explainClasses(
          loaded.cluster,
          endpoints,
          input.semantics,
          progress ? (done, total) => progress.update(done, total) : undefined,
        );
        progress?.finish();
        return explained;
      };
      const writeClasses = (explained: ClassExplanations): void => {
        const text =
          output === 'json'
            ? explainClassesJson(explained, missing ? { notEvaluated: missing.objects } : {})
            : formatExplainClassesText(explained, style) + note;
        refuseLargeOutput(sizeOfText(text), maxOutput, LESS);
        io.stdout.write(text);
        done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      };
      const view = asked === 'auto' && output === 'text' ? autoView(endpoints, loaded.cluster, io) : asked;
      if (view === 'class') return writeClasses(explainPerClass());
      // Auto, text: where the classes are fewer, the text per endpoint is estimated from theirs
      // (each member's block is its class's) — past --max-output the classes are said instead,
      // without making the text per endpoint (232 MB for shape (b)'s 1,000 pods).
      if (asked === 'auto' && output === 'text' && maxOutput !== Infinity) {
        const classes = explainClassesOf(loaded.cluster, endpoints).representatives.length;
        if (classes < endpoints.length) {
          const explained = explainPerClass();
          const bytes = estimateExplainText(explained, style);
          if (bytes > maxOutput) {
            io.stderr.write(
              `explain: the text per endpoint would be about ${formatSize(bytes)}, more than --max-output ${formatSize(maxOutput)}; ` +
                `its ${endpoints.length.toLocaleString('en-US')} endpoints behave as ${classes.toLocaleString('en-US')} classes ` +
                '(endpoints no policy tells apart): one explanation per class (--by endpoint --force for every endpoint)\n',
            );
            return writeClasses(explained);
          }
        }
      }
      progress?.phase(`explaining ${endpoints.length.toLocaleString('en-US')} endpoints`);
      const explanations = explainEndpoints(
        loaded.cluster,
        endpoints,
        input.semantics,
        progress ? (done, total) => progress.update(done, total) : undefined,
      );
      progress?.finish();
      // Made whole, then measured: at 100,000 pods the text is 60 MB (its size follows the input's).
      const text =
        output === 'json'
          ? JSON.stringify(
              { endpoints: explanations, ...(missing ? { notEvaluated: missing.objects } : {}) },
              null,
              2,
            ) + '\n'
          : formatExplainText(explanations, style) + note;
      const size = sizeOfText(text);
      // Only an output past the limit needs the classes counted, to offer them.
      const classes =
        size.bytes > maxOutput ? explainClassesOf(loaded.cluster, endpoints).representatives.length : 0;
      refuseLargeOutput(size, maxOutput, [
        ...(classes > 0 && classes < endpoints.length
          ? [
              `--by class (${classes.toLocaleString('en-US')} class${classes === 1 ? '' : 'es'} of endpoints no policy tells apart)`,
            ]
          : []),
        ...LESS,
      ]);
      io.stdout.write(text);
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/**
 * `--by auto` (text): each endpoint, but the classes past 1,000 endpoints when they are at most
 * half as many — at scale, endpoints that behave alike are explained once. Said on stderr, with
 * how to ask for every endpoint.
 */
function autoView(
  endpoints: readonly Endpoint[],
  cluster: Parameters<typeof explainClassesOf>[0],
  io: CliIo,
): 'endpoint' | 'class' {
  if (endpoints.length <= CLASSES_FROM_ENDPOINTS) return 'endpoint';
  const classes = explainClassesOf(cluster, endpoints).representatives.length;
  if (classes * 2 > endpoints.length) return 'endpoint';
  io.stderr.write(
    `explain: ${endpoints.length.toLocaleString('en-US')} endpoints behave as ${classes.toLocaleString('en-US')} classes ` +
      '(endpoints no policy tells apart): one explanation per class (--by endpoint for every endpoint)\n',
  );
  return 'class';
}
