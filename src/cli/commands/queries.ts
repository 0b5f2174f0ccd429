/**
 * `palisade equiv|contains|interferes -f FIRST… --to SECOND…`: Network Config Analyzer's set
 * queries between two policy sets over one topology, answered with witnesses. Exit 1 when the
 * answer calls for action: not equivalent, not contained, interferes.
 */
import { Command } from 'commander';
import { runQuery, type QueryName, type QueryResult, type Witness } from '../../analysis/diff/index.ts';
import { portSetJson } from '../../analysis/index.ts';
import { formatPortSet } from '../../semantics/index.ts';
import { checkChoice, resolveInputOptions, withInputOptions, writeJson } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';
import { loadBoth, withSecondInput } from '../two-inputs.ts';

const DESCRIPTIONS: Record<QueryName, string> = {
  equiv: 'do two policy sets (-f, --to) allow exactly the same connections? witnesses when not',
  contains: 'does the second policy set (--to) allow everything the first (-f) allows? witnesses when not',
  interferes:
    "does adding the second policy set (--to) to the first (-f) allow more to or from endpoints the first's policies select? witnesses when it does",
};

export const equivCommand = (io: CliIo, done: (code: number) => void): Command =>
  queryCommand('equiv', io, done);
export const containsCommand = (io: CliIo, done: (code: number) => void): Command =>
  queryCommand('contains', io, done);
export const interferesCommand = (io: CliIo, done: (code: number) => void): Command =>
  queryCommand('interferes', io, done);

function queryCommand(query: QueryName, io: CliIo, done: (code: number) => void): Command {
  return withSecondInput(withInputOptions(new Command(query)), 'the second input')
    .description(DESCRIPTIONS[query])
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const { first, second, inputErrors } = await loadBoth(input, raw.to, io);
      const result = runQuery(query, first.cluster, second.cluster, { semantics: input.semantics });
      if (output === 'json') writeJson(io, queryJson(result));
      else io.stdout.write(queryText(result));
      const actionable = query === 'interferes' ? result.holds : !result.holds;
      done(actionable || inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

function queryJson(result: QueryResult): object {
  const kind = (p: Witness['from']): string => (p.type === 'endpoint' ? p.kind : 'Addresses');
  return {
    query: result.query,
    holds: result.holds,
    witnesses: result.witnesses.map((w) => ({
      from: w.from.id,
      fromKind: kind(w.from),
      to: w.to.id,
      toKind: kind(w.to),
      first: formatPortSet(w.first),
      second: formatPortSet(w.second),
      ports: formatPortSet(w.ports),
      portSet: portSetJson(w.ports),
    })),
  };
}

function queryText(result: QueryResult): string {
  const n = result.witnesses.length;
  const pairs = `${n} pair${n === 1 ? '' : 's'}`;
  const headline: Record<QueryName, [string, string]> = {
    equiv: ['equivalent: both allow exactly the same connections', `not equivalent: ${pairs} differ`],
    contains: [
      'contained: the second allows everything the first allows',
      `not contained: ${pairs} ${n === 1 ? 'allows' : 'allow'} ports under the first that the second does not`,
    ],
    interferes: [
      `interferes: with the second, ${pairs} the first's policies decide ${n === 1 ? 'allows' : 'allow'} more`,
      "does not interfere: nothing the first's policies decide allows more with the second",
    ],
  };
  const [yes, no] = headline[result.query];
  const lines = [result.holds ? yes : no];
  for (const w of result.witnesses) {
    const what =
      result.query === 'interferes'
        ? `+${formatPortSet(w.ports)}`
        : `${formatPortSet(w.ports)} (first: ${formatPortSet(w.first)}; second: ${formatPortSet(w.second)})`;
    lines.push(`  ${w.from.label} → ${w.to.label}: ${what}`);
  }
  return lines.join('\n') + '\n';
}
