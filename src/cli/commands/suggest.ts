/**
 * `palisade suggest -f CLUSTER --flows FILE` (or `--expect FILE`): least-privilege
 * NetworkPolicies from observed flows (NDJSON flow records, `-` for stdin) or from `assert`'s
 * expectations file, verified with the reference evaluator before they are printed. The cluster
 * (manifests or a live cluster, as every command reads it) gives the labels flow records may
 * lack. Reading the agents' `/flows` directly is not done here yet: save it to a file first
 * (`curl …/flows > flows.ndjson`). Exit 1 when an input has errors (what could be read is still
 * used) or the suggestion is not exact, 3 when an `allowed: false` expectation would be allowed.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import {
  observeExpectations,
  observeFlows,
  suggestPolicies,
  suggestionSummary,
  suggestionYaml,
  type Observed,
  type Suggestion,
} from '../../analysis/index.ts';
import { readFlowFile } from '../../flows/index.ts';
import type { Diagnostic } from '../../model/types.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { readExpectationsFile } from '../expectations-file.ts';
import { fileErrorText } from '../file-error.ts';
import { stdinNamedTwice } from '../input-options.ts';
import { EXIT_EXPECTATION_FAILED, EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function suggestCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('suggest'))
    .description(
      'write least-privilege NetworkPolicies from observed flows (or expected connections), verified to allow exactly them',
    )
    .option('--flows <files...>', 'flow records, one JSON object per line (NDJSON); - reads stdin')
    .option(
      '--expect <file>',
      'expected connections, as assert reads them (allowed: true ones are let through)',
    )
    .option('--no-dns', 'leave out DNS to kube-dns (kept by default for every pod that gets egress policy)')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .option(
      '--out-dir <dir>',
      'write one file per namespace (<namespace>.yaml) there; the summary goes to stdout',
    )
    .addHelpText(
      'after',
      '\nThe policies isolate every namespace with pods (or those given with -n) and let through, per\nworkload, exactly what was seen: peers by their workload labels and namespace name, addresses\noutside the cluster as /32 ipBlocks, ports by number. The header says what was generalised.',
    )
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['yaml', 'json'] as const);
      const flowFiles = (raw.flows as string[] | undefined) ?? [];
      const expect = raw.expect as string | undefined;
      if (flowFiles.length === 0 && expect === undefined)
        throw new UsageError(
          'give the observed connections: --flows FILE (NDJSON flow records) or --expect FILE',
        );
      const stdin = stdinNamedTwice(['-f', input.file], ['--flows', flowFiles]);
      if (stdin) throw new UsageError(stdin);
      const outDir = raw.outDir as string | undefined;
      if (outDir !== undefined && output === 'json')
        throw new UsageError('--out-dir writes YAML files; leave out -o json');

      const expectations = expect === undefined ? undefined : await readExpectationsFile(expect);
      const loaded = await loadInput(input, io);
      const flowDiagnostics: Diagnostic[] = [];
      const observed: Observed[] = [];
      for (const file of flowFiles) {
        const text = await readFlowText(file, io, input.maxFileSize);
        const read = readFlowFile(file === '-' ? '<stdin>' : file, text);
        flowDiagnostics.push(...read.diagnostics);
        observed.push(observeFlows(loaded.cluster, read.flows));
      }
      if (expectations) observed.push(observeExpectations(loaded.cluster, expectations));
      const diagnostics = [
        ...loaded.diagnostics,
        ...flowDiagnostics,
        ...observed.flatMap((o) => o.diagnostics),
      ];
      const inputErrors = reportDiagnostics(diagnostics, io, input.verbose);
      const denied = observed.reduce((n, o) => n + o.deniedSkipped, 0);
      if (denied > 0)
        io.stderr.write(
          `palisade: ${denied} flow record${denied === 1 ? '' : 's'} with verdict "denied" left out\n`,
        );

      const suggestion = suggestPolicies(
        loaded.cluster,
        observed.flatMap((o) => o.observations),
        observed.flatMap((o) => o.prohibitions),
        { ...(input.namespaces ? { namespaces: input.namespaces } : {}), dns: raw.dns !== false },
      );
      const source = [...flowFiles.map((f) => (f === '-' ? '<stdin>' : f)), ...(expect ? [expect] : [])].join(
        ', ',
      );
      if (output === 'json') writeJson(io, suggestionJson(suggestion));
      else if (outDir !== undefined) await writeDirectory(io, outDir, suggestion, source);
      else io.stdout.write(suggestionYaml(suggestion, source));
      const v = suggestion.verification;
      if (!v.exact)
        io.stderr.write(
          `palisade: the suggestion is not exact (${v.mismatches.length} pair${v.mismatches.length === 1 ? '' : 's'} differ, ${v.violated.length} expected-denied allowed); see its header\n`,
        );
      done(v.violated.length ? EXIT_EXPECTATION_FAILED : inputErrors || !v.exact ? EXIT_FINDINGS : EXIT_OK);
    });
}

async function readFlowText(file: string, io: CliIo, maxMiB: number): Promise<string> {
  const max = maxMiB * 1024 * 1024;
  if (file === '-') {
    const text = await io.readStdin(max);
    if (text === undefined)
      throw new UsageError(`--flows -: standard input is larger than --max-file-size (${maxMiB} MiB)`);
    return text;
  }
  try {
    const text = await readFile(file, 'utf8');
    if (text.length > max)
      throw new UsageError(`--flows: ${file} is larger than --max-file-size (${maxMiB} MiB)`);
    return text;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--flows: cannot read ${file}: ${fileErrorText(error)}`);
  }
}

async function writeDirectory(io: CliIo, dir: string, s: Suggestion, source: string): Promise<void> {
  const byNamespace = new Map<string, Suggestion['policies'][number][]>();
  for (const p of s.policies) {
    const ns = (p.object.metadata as { namespace: string }).namespace;
    const list = byNamespace.get(ns);
    if (list) list.push(p);
    else byNamespace.set(ns, [p]);
  }
  try {
    await mkdir(dir, { recursive: true });
    for (const [ns, policies] of byNamespace)
      await writeFile(join(dir, `${ns}.yaml`), suggestionYaml(s, source, policies));
  } catch (error) {
    throw new UsageError(`--out-dir: cannot write to ${dir}: ${fileErrorText(error)}`);
  }
  io.stdout.write(suggestionSummary(s, source).join('\n') + '\n');
  for (const ns of byNamespace.keys())
    io.stdout.write(`wrote ${join(dir, `${ns}.yaml`)} (${byNamespace.get(ns)?.length} policies)\n`);
}

function suggestionJson(s: Suggestion): object {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: s.policies.map((p) => p.object),
    generalised: s.generalised,
    verification: s.verification,
    observations: s.observations,
    connections: s.connections,
  };
}
