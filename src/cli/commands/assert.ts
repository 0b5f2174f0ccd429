/**
 * `palisade assert -f … --expect FILE`: connectivity tests as code. Each expected connection is
 * checked against the reference evaluator; every failure is printed with the explanation `check`
 * gives. Exit 3 when one fails (or names something the input lacks), whatever else the input
 * holds — as `check --expect` — 1 when all pass but the input has errors, 2 when the file is not
 * valid.
 */
import { Command } from 'commander';
import {
  checkExpectations,
  formatCheckText,
  styleFor,
  type AssertionResult,
  type Style,
} from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { readExpectationsFile } from '../expectations-file.ts';
import { EXIT_EXPECTATION_FAILED, EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';
import { escapeControls } from '../../util/escape.ts';

export function assertCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('assert'))
    .description('check a YAML list of expected connections (from, to, port, allowed); explain every failure')
    .requiredOption('--expect <file>', 'the expected connections')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const expectations = await readExpectationsFile(String(raw.expect));
      const loaded = await loadInput(input, io);
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      const results = checkExpectations(loaded.cluster, expectations, { semantics: input.semantics });
      if (output === 'json') writeJson(io, assertJson(results));
      else io.stdout.write(assertText(results, styleFor(io.stdoutIsTty, io.env)));
      const failed = results.some((r) => r.status !== 'passed');
      done(failed ? EXIT_EXPECTATION_FAILED : inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

function place(r: AssertionResult): string {
  const l = r.expectation.location;
  return l ? `${escapeControls(l.file)}:${l.line}:${l.column}: ` : '';
}

function assertText(results: readonly AssertionResult[], style: Style): string {
  const out: string[] = [];
  for (const r of results) {
    const e = r.expectation;
    const want = e.allowed ? 'allowed' : 'denied';
    if (r.status === 'unresolved') {
      // The file's own text, shown escaped: it may hold anything.
      const what = escapeControls(`${e.from} → ${e.to} ${e.protocol}/${e.port}: ${r.message}`);
      out.push(`${style.bad('FAIL')} ${place(r)}${what}\n`);
      continue;
    }
    const port = r.check.portName ? `${r.check.portName} (${r.check.port})` : String(r.check.port);
    const head = `${r.check.from} → ${r.check.to} ${r.check.protocol}/${port}`;
    if (r.status === 'passed') {
      out.push(`${style.ok('ok  ')} ${head}: ${want}, as expected\n`);
      continue;
    }
    out.push(
      `${style.bad('FAIL')} ${place(r)}${head}: expected ${want}, but it is ${r.check.verdict.allowed ? 'allowed' : 'denied'}\n`,
    );
    // The explanation `check` gives, without its headline.
    out.push(formatCheckText(r.check, style).split('\n').slice(1).join('\n'));
  }
  const failed = results.filter((r) => r.status !== 'passed').length;
  out.push(
    `\n${results.length} expectation${results.length === 1 ? '' : 's'}: ${results.length - failed} passed, ${failed} failed\n`,
  );
  return out.join('');
}

function assertJson(results: readonly AssertionResult[]): object {
  return {
    results: results.map((r) => ({
      from: r.expectation.from,
      to: r.expectation.to,
      port: r.expectation.port,
      protocol: r.expectation.protocol,
      expected: r.expectation.allowed,
      status: r.status,
      ...(r.status === 'unresolved'
        ? { message: r.message }
        : { allowed: r.check.verdict.allowed, check: r.check }),
      ...(r.expectation.location ? { ...r.expectation.location } : {}),
    })),
    summary: {
      passed: results.filter((r) => r.status === 'passed').length,
      failed: results.filter((r) => r.status !== 'passed').length,
    },
  };
}
