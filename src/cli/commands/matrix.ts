/**
 * `palisade matrix`: reachability between all endpoints, per port or as allowed port sets.
 */
import { Command } from 'commander';
import { PROTOCOLS, type Endpoint, type Protocol } from '../../model/types.ts';
import { namedPortOf } from '../../semantics/index.ts';
import {
  askForPort,
  CLI_SPELLING,
  computeViewMatrix,
  focusMatrix,
  MATRIX_VIEWS,
  groupEndpoints,
  MATRIX_FORMATS,
  matrixEndpoints,
  outsideClasses,
  OUTSIDE_BUDGET,
  parsePortQuery,
  styleFor,
  textTableWidth,
  type MatrixRow,
  type PortQuery,
  type RowGrouping,
} from '../../analysis/index.ts';
import {
  checkChoice,
  loadInput,
  notEvaluated,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, writeStreaming, type CliIo } from '../io.ts';
import { progressBar } from '../progress.ts';
import { GRAPH_FORMATS, GROUP_BY_HELP, isGraphFormat, writeMatrixGraph } from '../graph-output.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function matrixCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('matrix'))
    .description('reachability between every pair of endpoints')
    .option(
      '--port <port>',
      'a port column (number, name, or 53/UDP); repeat for more; none lists allowed ports per pair',
      collect,
    )
    .option(
      '--protocol <protocol>',
      'protocol for the --port columns: one for every port that names none (53/UDP does), or one per --port',
      collect,
    )
    .option(
      '--by <view>',
      'rows: workload (pods under their owning workload, ns/name[Kind]), pod (every pod) or service (the pods behind each Service, ns/name[Service])',
      'workload',
    )
    .option(
      '-o, --output <format>',
      `${[...Object.keys(MATRIX_FORMATS), ...GRAPH_FORMATS].join(', ')}`,
      'text',
    )
    .option('--group-by <what>', GROUP_BY_HELP, 'workload')
    .option(
      '--addresses <when>',
      'connections with the address ranges outside the cluster: auto (when quick to compute), all, or none',
      'auto',
    )
    .option(
      '--focus <row>',
      'only this row (ns/name or ns/name[Kind]: a workload, a pod, or a Service with --by service) and the rows it can connect with, either way',
    )
    .option('--wide', 'print a text table even when it is wider than the terminal', false)
    .option(
      '--engine <engine>',
      'auto (compiled where it is exact and pays), reference (the evaluator) or compiled (the compiled tables: same verdicts)',
      'auto',
    )
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const format = checkChoice('--output', raw.output, [...Object.keys(MATRIX_FORMATS), ...GRAPH_FORMATS]);
      const ports = (raw.port as string[] | undefined) ?? [];
      const protocols = (raw.protocol as string[] | undefined) ?? [];
      const queries = parseQueries(ports, protocols);
      const engine = checkChoice('--engine', raw.engine, ['auto', 'reference', 'compiled'] as const);
      const view = checkChoice('--by', raw.by, MATRIX_VIEWS);
      const groupBy = checkChoice('--group-by', raw.groupBy, ['workload', 'namespace'] as const);
      const addresses = checkChoice('--addresses', raw.addresses, ['auto', 'all', 'none'] as const);
      // Namespace rows for tables; graphs draw namespaces from the workload rows themselves.
      // -o json keeps its contract: one entry per workload or pod pair, named ns/name.
      if (groupBy === 'namespace' && format === 'json')
        throw new UsageError(
          '--group-by namespace applies to text, csv, md and the graph formats; -o json lists workloads (or pods with --by pod)',
        );
      const by: RowGrouping = groupBy === 'namespace' && !isGraphFormat(format) ? 'namespace' : view;
      if (engine === 'compiled' && input.semantics !== 'v1')
        throw new UsageError('--engine compiled implements v1 semantics');
      const namespaces = raw.namespace as string[] | undefined;
      const loaded = await loadInput(input, io, { rawObjects: false });
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      refuseUnknownPortNames(
        queries,
        matrixEndpoints(loaded.cluster, namespaces),
        protocolsArePerPort(ports, protocols),
      );
      const focus = raw.focus as string | undefined;
      // With --focus, the table is judged once narrowed.
      if (format === 'text' && queries.length > 0 && raw.wide !== true && focus === undefined)
        refuseTooWide(
          io,
          groupEndpoints(matrixEndpoints(loaded.cluster, namespaces), by, loaded.cluster),
          by === 'namespace',
        );
      const progress = io.stderrIsTty
        ? progressBar(io.stderr, 'matrix', { escapes: io.env.NO_COLOR === undefined })
        : undefined;
      const computed = computeViewMatrix(loaded.cluster, {
        by,
        queries,
        semantics: input.semantics,
        engine,
        byFamily: true,
        ...(namespaces ? { namespaces } : {}),
        ...(progress ? { onProgress: progress.update } : {}),
      });
      progress?.finish();
      const matrix = focus === undefined ? computed : focusMatrix(computed, focus);
      if (typeof matrix === 'string') throw new UsageError(matrix);
      if (focus !== undefined && format === 'text' && queries.length > 0 && raw.wide !== true)
        refuseTooWide(io, matrix.rows, by === 'namespace');
      if (isGraphFormat(format)) {
        await writeMatrixGraph(io, matrix, loaded.cluster, format, groupBy, input.semantics);
        return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      }
      const writer = MATRIX_FORMATS[format];
      if (!writer) throw new UsageError(`unknown format ${format}`);
      const missing = notEvaluated(loaded.cluster);
      const outside =
        addresses === 'none'
          ? []
          : outsideClasses(
              matrix,
              loaded.cluster,
              input.semantics,
              addresses === 'all' ? Number.POSITIVE_INFINITY : OUTSIDE_BUDGET,
            );
      if (outside === undefined)
        io.stderr.write(
          `palisade: note: connections with address ranges outside the cluster are left out at this size (${matrix.rows.length} rows); --addresses all includes them\n`,
        );
      await writeStreaming(
        io.stdout,
        writer(matrix, styleFor(io.stdoutIsTty, io.env), {
          ...(missing ? { notEvaluated: missing } : {}),
          ...(outside && outside.length > 0 ? { outside } : {}),
        }),
      );
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/**
 * A port name that no destination has (`--port rediss` for `redis`) would make every cell
 * denied, which reads as an answer; refused as `check` refuses it. A name only some pods have is
 * a real question: the others have no such port to connect to.
 */
function refuseUnknownPortNames(
  queries: readonly PortQuery[],
  endpoints: readonly Endpoint[],
  protocolsPerPort: boolean,
): void {
  for (const { port, protocol } of queries) {
    if (typeof port !== 'string') continue;
    const hasPort = (p: Protocol): boolean => endpoints.some((e) => namedPortOf(e, port, p) !== undefined);
    if (hasPort(protocol)) continue;
    // As check says it: the name exists, on another protocol.
    const other = PROTOCOLS.find((p) => p !== protocol && hasPort(p));
    const hint = other
      ? ` (some have one on ${other}: ${askForPort(CLI_SPELLING, port, other, protocolsPerPort)})`
      : '';
    throw new UsageError(
      `--port ${port}: no pod in the matrix has a ${protocol} container port named "${port}"${hint}`,
    );
  }
}

/**
 * A text table wider than the terminal it is printed on is unreadable (and, at thousands of
 * endpoints, hundreds of megabytes): refused unless `--wide` asks for it, with what to use.
 */
function refuseTooWide(io: CliIo, rows: readonly MatrixRow[], byNamespace: boolean): void {
  const columns = io.stdoutColumns;
  // A terminal of unknown width (0: some pseudo-terminals do not say) is not judged.
  if (!io.stdoutIsTty || columns === undefined || columns <= 0) return;
  const width = textTableWidth(rows);
  if (width <= columns) return;
  const grouped = byNamespace ? '' : '--group-by namespace (a row per namespace), ';
  throw new UsageError(
    `the table of ${rows.length} ${rows.length === 1 ? 'row' : 'rows'} is ${width} characters wide and the terminal ${columns}: ` +
      `use ${grouped}-o csv, -o json or -o md (or narrow it with -n), or --wide to print it anyway`,
  );
}

/**
 * One --protocol per --port belongs to that port, which may not name another; one for several
 * ports is a default for them all, which a port naming its own protocol overrides.
 */
function protocolsArePerPort(ports: readonly string[], protocols: readonly string[]): boolean {
  return protocols.length === ports.length;
}

/** `--port 80 --port 53/UDP --protocol TCP` → queries; protocols pair with ports or apply to all. */
function parseQueries(ports: readonly string[], protocols: readonly string[]): PortQuery[] {
  if (protocols.length > 1 && protocols.length !== ports.length) {
    throw new UsageError(
      `give one --protocol for all ports, or one per --port (got ${protocols.length} for ${ports.length})`,
    );
  }
  if (ports.length === 0 && protocols.length > 0)
    throw new UsageError('--protocol needs at least one --port');
  const perPort = protocolsArePerPort(ports, protocols);
  return ports.map((text, i) => {
    const protocol = protocols[perPort ? i : 0];
    const parsed = parsePortQuery(text, {
      ...(protocol !== undefined ? { protocol } : {}),
      protocolIsForThisPort: perPort,
    });
    if (!parsed.ok) throw new UsageError(parsed.message);
    return parsed.query;
  });
}
