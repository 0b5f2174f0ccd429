/**
 * `palisade lint`: policy problems with stable codes, located, each with a fix; text, JSON or
 * SARIF; a non-zero exit when a finding reaches the `--fail-on` severity.
 */
import { Command } from 'commander';
import { lintCluster, isKnownCode, LINT_CODES, objectLocator } from '../../analysis/lint/index.ts';
import { formatLintText, lintSarif, styleFor } from '../../analysis/index.ts';
import { DIAGNOSTIC_CATALOGUE, type Severity } from '../../model/diagnostics.ts';
import { closest } from '../../util/closest.ts';
import { phases } from '../progress.ts';
import { refuseLargeOutput, resolveMaxOutput, sizeOfText, withOutputLimit } from '../output-limit.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { VERSION } from '../version.ts';

const FAIL_ON = ['error', 'warning', 'info', 'none'] as const;
const RANK: Record<Severity, number> = { error: 3, warning: 2, info: 1 };

const collect = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
];

export function lintCommand(io: CliIo, done: (code: number) => void): Command {
  return withOutputLimit(withInputOptions(new Command('lint')))
    .description('find policy mistakes: stable codes, locations, fixes (docs/LINT.md lists the checks)')
    .option('-o, --output <format>', 'text, json or sarif', 'text')
    .option(
      '--fail-on <severity>',
      `exit 1 on a finding at least this severe: ${FAIL_ON.join(', ')}`,
      'error',
    )
    .option('--only <codes>', 'report only these codes (comma-separated or repeated)', collect)
    .option('--skip <codes>', 'never report these codes (comma-separated or repeated)', collect)
    .option(
      '--by <view>',
      'findings about endpoints (WORKLOAD_NOT_ISOLATED): workload (its pods together), class (once per class of endpoints no policy tells apart, its members named compactly and counted; -o json lists them), or auto (workload; class for text past 1,000 such findings when classes are at most half of them)',
      'auto',
    )
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json', 'sarif'] as const);
      const failOn = checkChoice('--fail-on', raw.failOn, FAIL_ON);
      const only = checkCodes('--only', (raw.only as string[] | undefined) ?? []);
      const skip = checkCodes('--skip', (raw.skip as string[] | undefined) ?? []);
      const maxOutput = resolveMaxOutput(raw.maxOutput, raw.force);
      const asked = checkChoice('--by', raw.by, ['auto', 'workload', 'class'] as const);
      // JSON and SARIF keep their findings per workload unless classes are asked for.
      const by = asked === 'auto' && output !== 'text' ? 'workload' : asked;
      const loaded = await loadInput(input, io);
      // Errors and warnings of the input are findings; only infos stay on stderr (with -v).
      if (input.verbose)
        reportDiagnostics(
          loaded.diagnostics.filter((d) => d.severity === 'info'),
          io,
          true,
        );
      const progress = phases(io);
      progress?.phase('linting');
      const report = lintCluster(loaded.cluster, {
        semantics: input.semantics,
        only,
        skip,
        locator: objectLocator(loaded.rawObjects),
        diagnostics: loaded.diagnostics,
        by,
        ...(progress ? { onProgress: (done: number, total: number) => progress.update(done, total) } : {}),
      });
      progress?.finish();
      if (asked === 'auto' && report.classes)
        io.stderr.write(
          `lint: ${report.classes.findings.toLocaleString('en-US')} workloads no policy selects behave as ` +
            `${report.classes.classes.toLocaleString('en-US')} classes (endpoints no policy tells apart): ` +
            'WORKLOAD_NOT_ISOLATED once per class (--by workload for one per workload)\n',
        );
      // Made whole, then measured: at 100,000 pods the findings' text is 17 MB.
      const json = (value: unknown): string => JSON.stringify(value, null, 2) + '\n';
      const text =
        output === 'json'
          ? json(report)
          : output === 'sarif'
            ? json(lintSarif(report, VERSION))
            : formatLintText(report, styleFor(io.stdoutIsTty, io.env));
      refuseLargeOutput(sizeOfText(text), maxOutput, ['--only CODES (these checks alone)', '--skip CODES']);
      io.stdout.write(text);
      const failing = failOn !== 'none' && report.findings.some((f) => RANK[f.severity] >= RANK[failOn]);
      done(failing ? EXIT_FINDINGS : EXIT_OK);
    });
}

function checkCodes(flag: string, codes: readonly string[]): string[] {
  for (const code of codes) {
    if (isKnownCode(code)) continue;
    const suggestion = closest(code, [...LINT_CODES, ...Object.keys(DIAGNOSTIC_CATALOGUE)], 4);
    throw new UsageError(
      `${flag}: unknown code "${code}"${suggestion ? ` (did you mean ${suggestion}?)` : ''}; docs/LINT.md lists them`,
    );
  }
  return [...codes];
}
