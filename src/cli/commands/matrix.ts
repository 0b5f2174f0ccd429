/**
 * `palisade matrix`: reachability between all endpoints, per port or as allowed port sets.
 */
import { Command } from 'commander';
import { PROTOCOLS, type Cluster, type Endpoint, type Protocol } from '../../model/types.ts';
import { namedPortOf } from '../../semantics/index.ts';
import {
  askForPort,
  CLASS_FORMATS,
  classReport,
  CLI_SPELLING,
  computeMatrix,
  computeViewMatrix,
  endpointClasses,
  estimateClassOutput,
  estimateMatrixOutput,
  findEndpoints,
  findService,
  focusRows,
  formatSize,
  groupEndpoints,
  ingressControllerPeer,
  MATRIX_FORMATS,
  matrixEndpoints,
  outsideClasses,
  OUTSIDE_BUDGET,
  parsePortQuery,
  restrictMatrix,
  serviceBackends,
  serviceLabel,
  styleFor,
  textTableWidth,
  type Matrix,
  type MatrixRow,
  type OutputEstimate,
  type PortQuery,
  type RowGrouping,
  notEvaluated,
  estimateMatrixExtras,
  matrixExtras,
} from '../../analysis/index.ts';
import {
  checkChoice,
  ingressControllerOption,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { phases, writeWithProgress } from '../progress.ts';
import { GRAPH_FORMATS, GROUP_BY_HELP, isGraphFormat, writeMatrixGraph } from '../graph-output.ts';
import { refuseLargeOutput, resolveMaxOutput, withOutputLimit } from '../output-limit.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Rows past which `--by auto` prints classes, when classes are at most half the rows (text, md). */
const CLASSES_FROM_ROWS = 1000;
const VIEWS = ['auto', 'workload', 'pod', 'service', 'class'] as const;

export function matrixCommand(io: CliIo, done: (code: number) => void): Command {
  return withOutputLimit(withInputOptions(new Command('matrix')))
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
      'rows: workload (pods under their owning workload, ns/name[Kind]), pod (every pod), service (the pods behind each Service, ns/name[Service]), class (endpoints no policy tells apart, one line per class pair that may connect), or auto (workload; class for text and md past 1,000 rows when classes are at most half of them, or when the rows would pass --max-output and classes are fewer)',
      'auto',
    )
    .option(
      '--focus <ns/name>',
      'only this workload, pod or Service (ns/name[Service]) and its peers (what it may connect to or be connected from); repeatable',
      collect,
    )
    .option(
      '-o, --output <format>',
      `${[...Object.keys(MATRIX_FORMATS), ...GRAPH_FORMATS].join(', ')}`,
      'text',
    )
    .option('--group-by <what>', GROUP_BY_HELP)
    .option(
      '--addresses <when>',
      'connections with the address ranges outside the cluster: auto (when quick to compute), all, or none',
      'auto',
    )
    .option(
      '--ingress-controller <place>',
      "where the ingress controller of Ingress and Route objects runs: NAMESPACE or NAMESPACE/key=value,… (its pods' labels); default: a namespace of its own, admitted only by policy admitting every namespace",
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
      const asked = checkChoice('--by', raw.by, VIEWS);
      // Unset: workloads for tables; for graphs, workloads when they fit a picture.
      const groupAsked =
        raw.groupBy === undefined
          ? undefined
          : checkChoice('--group-by', raw.groupBy, ['workload', 'namespace'] as const);
      const groupBy = groupAsked ?? 'workload';
      const addresses = checkChoice('--addresses', raw.addresses, ['auto', 'all', 'none'] as const);
      const place = ingressControllerOption(raw.ingressController);
      const maxOutput = resolveMaxOutput(raw.maxOutput, raw.force);
      // Namespace rows for tables; graphs draw namespaces from the workload rows themselves.
      // -o json keeps its contract: one entry per workload or pod pair, named ns/name.
      if (groupBy === 'namespace' && format === 'json')
        throw new UsageError(
          '--group-by namespace applies to text, csv, md and the graph formats; -o json lists workloads (or pods with --by pod)',
        );
      if (asked === 'class' && (groupBy === 'namespace' || isGraphFormat(format)))
        throw new UsageError(
          '--by class lists class pairs (text, json, csv, md); graphs and --group-by namespace aggregate workloads',
        );
      if (engine === 'compiled' && input.semantics !== 'v1')
        throw new UsageError('--engine compiled implements v1 semantics');
      const namespaces = raw.namespace as string[] | undefined;
      const progress = phases(io);
      const loaded = await loadInput(input, io, { rawObjects: false, ...(progress ? { progress } : {}) });
      progress?.finish();
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      const endpoints = matrixEndpoints(loaded.cluster, namespaces);
      refuseUnknownPortNames(queries, endpoints, protocolsArePerPort(ports, protocols));
      const view = chooseView(asked, format, groupBy, endpoints, loaded.cluster, io);
      const by: RowGrouping =
        groupBy === 'namespace' && !isGraphFormat(format) ? 'namespace' : view === 'class' ? 'pod' : view;
      const focus = raw.focus as string[] | undefined;
      if (format === 'text' && queries.length > 0 && raw.wide !== true && view !== 'class' && !focus)
        refuseTooWide(io, groupEndpoints(endpoints, by, loaded.cluster), by === 'namespace');
      progress?.phase('computing the matrix');
      const options = {
        queries,
        semantics: input.semantics,
        engine,
        byFamily: true,
        ...(progress ? { onProgress: (done: number, total: number) => progress.update(done, total) } : {}),
      } as const;
      const focused = focus ? focusedEndpoints(loaded.cluster, endpoints, focus) : undefined;
      const writeClasses = async (): Promise<void> => {
        let matrix = computeMatrix(loaded.cluster, { ...options, endpoints });
        if (focused) {
          const rows = focusRows(matrix, new Set(endpoints.flatMap((e, i) => (focused.has(e) ? [i] : []))));
          matrix = computeMatrix(loaded.cluster, {
            ...options,
            endpoints: rows.map((r) => endpoints[r] as Endpoint),
          });
        }
        progress?.finish();
        const report = classReport(matrix);
        const writer = CLASS_FORMATS[format];
        if (!writer) throw new UsageError(`--by class prints text, json, csv or md, not ${format}`);
        const estimate = estimated(() => estimateClassOutput(report, format, maxOutput), maxOutput);
        refuseLargeOutput(estimate, maxOutput, lessMatrix(report.rows.length, format, true));
        await writeWithProgress(
          io,
          writer(report, styleFor(io.stdoutIsTty, io.env)),
          estimate.bytes,
          progress,
        );
        done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      };
      if (view === 'class') return writeClasses();
      // Graphs are built from classes themselves: a matrix of rows is only needed to find the
      // peers of a focus.
      const drawGraph = async (shown: readonly Endpoint[]): Promise<void> => {
        if (!isGraphFormat(format)) return;
        await writeMatrixGraph(io, loaded.cluster, format, {
          endpoints: shown,
          queries,
          semantics: input.semantics,
          groupBy: groupAsked,
          force: raw.force === true,
          ...(progress ? { progress } : {}),
        });
        done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      };
      if (isGraphFormat(format) && !focused) return drawGraph(endpoints);
      let matrix: Matrix = computeViewMatrix(loaded.cluster, { ...options, by, endpoints });
      progress?.finish();
      if (focused) {
        const rows = (matrix.rows as readonly { members?: readonly Endpoint[] }[]).flatMap((row, i) =>
          (row.members ?? [matrix.endpoints[i] as Endpoint]).some((e) => focused.has(e)) ? [i] : [],
        );
        matrix = restrictMatrix(matrix, focusRows(matrix, new Set(rows)));
      }
      if (isGraphFormat(format))
        return drawGraph(
          (matrix.rows as readonly { members?: readonly Endpoint[] }[]).flatMap(
            (row, i) => row.members ?? [matrix.endpoints[i] as Endpoint],
          ),
        );
      const writer = MATRIX_FORMATS[format];
      if (!writer) throw new UsageError(`unknown format ${format}`);
      const estimate = estimated(() => estimateMatrixOutput(matrix, format, maxOutput), maxOutput);
      if (classesInstead(asked, format, groupBy, estimate, maxOutput, matrix, io)) {
        progress?.phase('computing the matrix per class');
        return writeClasses();
      }
      // The rows alone pass the limit: the address ranges' lines, not computed yet, would add more.
      refuseLargeOutput(
        addresses === 'none' ? estimate : { ...estimate, atLeast: true },
        maxOutput,
        lessMatrix(matrix.stats.classes, format, false),
      );
      const missing = notEvaluated(loaded.cluster);
      const outside =
        addresses === 'none'
          ? []
          : outsideClasses(
              matrix,
              loaded.cluster,
              input.semantics,
              addresses === 'all' ? Number.POSITIVE_INFINITY : OUTSIDE_BUDGET,
              // What only some pods of a row may: text says it (`~`); the others say every pod's.
              format === 'text',
            );
      if (outside === undefined)
        io.stderr.write(
          `palisade: note: connections with address ranges outside the cluster are left out at this size (${matrix.rows.length} rows); --addresses all includes them\n`,
        );
      const ingressController = ingressControllerPeer(matrix, loaded.cluster, place, input.semantics);
      const extras = matrixExtras({ notEvaluated: missing, outside, ingressController });
      // The lines for the ranges and the controller can be as many as the rows' own.
      const more = estimateMatrixExtras(matrix, extras, format, maxOutput - estimate.bytes);
      refuseLargeOutput(
        {
          bytes: estimate.bytes + more.bytes,
          lines: estimate.lines + more.lines,
          atLeast: estimate.atLeast || more.atLeast,
        },
        maxOutput,
        [...lessMatrix(matrix.stats.classes, format, false), '--addresses none (no address ranges)'],
      );
      await writeWithProgress(
        io,
        writer(matrix, styleFor(io.stdoutIsTty, io.env), extras),
        estimate.bytes + more.bytes,
        progress,
      );
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/**
 * `--by auto`: workloads (or pods, as asked), but the classes for people's formats (text, md)
 * when there are many rows and the classes are at most half of them — at scale, the rows that
 * behave alike are said once. Said on stderr, with how to ask for the rows instead.
 */
function chooseView(
  asked: (typeof VIEWS)[number],
  format: string,
  groupBy: 'workload' | 'namespace',
  endpoints: readonly Endpoint[],
  cluster: Parameters<typeof endpointClasses>[0],
  io: CliIo,
): Exclude<(typeof VIEWS)[number], 'auto'> {
  if (asked !== 'auto') return asked;
  if ((format !== 'text' && format !== 'md') || groupBy === 'namespace') return 'workload';
  const rows = groupEndpoints(endpoints, 'workload').length;
  if (rows <= CLASSES_FROM_ROWS) return 'workload';
  const classes = endpointClasses(cluster, endpoints).representatives.length;
  if (classes * 2 > rows) return 'workload';
  io.stderr.write(
    `matrix: ${rows.toLocaleString('en-US')} workloads behave as ${classes.toLocaleString('en-US')} classes (endpoints no policy tells apart): ` +
      'one line per class pair (--by workload for one per workload pair)\n',
  );
  return 'class';
}

/**
 * `--by auto`, text or md: rows whose output would pass `--max-output` are said per class
 * instead, when the classes are fewer than the rows — at any count of rows, the answer a person
 * can read rather than a refusal (stderr says so, and how to ask for the rows).
 */
function classesInstead(
  asked: (typeof VIEWS)[number],
  format: string,
  groupBy: 'workload' | 'namespace',
  estimate: OutputEstimate,
  limit: number,
  matrix: Matrix,
  io: CliIo,
): boolean {
  if (asked !== 'auto' || (format !== 'text' && format !== 'md') || groupBy === 'namespace') return false;
  if (estimate.bytes <= limit || matrix.stats.classes >= matrix.rows.length) return false;
  io.stderr.write(
    `matrix: the output per workload would be ${estimate.atLeast ? 'more than' : 'about'} ${formatSize(estimate.bytes)}, ` +
      `more than --max-output ${formatSize(limit)}; its ${matrix.rows.length.toLocaleString('en-US')} rows behave as ` +
      `${matrix.stats.classes.toLocaleString('en-US')} classes (endpoints no policy tells apart): one line per class pair ` +
      '(--by workload --force for the rows)\n',
  );
  return true;
}

/**
 * The endpoints `--focus` names: a pod, a workload (its pods) or a Service (the pods behind it,
 * `ns/name[Service]`).
 */
function focusedEndpoints(
  cluster: Cluster,
  inMatrix: readonly Endpoint[],
  names: readonly string[],
): Set<Endpoint> {
  const focused = new Set<Endpoint>();
  for (const name of names) {
    const service = findService(cluster, name);
    if (typeof service === 'string') throw new UsageError(`--focus: ${service}`);
    const found = service
      ? { endpoints: serviceBackends(cluster, service) }
      : findEndpoints(cluster.endpoints, name);
    if (typeof found === 'string') throw new UsageError(`--focus: ${found}`);
    if (found.endpoints.length === 0 && service)
      throw new UsageError(`--focus: ${serviceLabel(service)} selects no pod in the input`);
    for (const e of found.endpoints) focused.add(e);
  }
  const shown = new Set(inMatrix);
  if (![...focused].some((e) => shown.has(e)))
    throw new UsageError(
      `--focus: ${names.join(', ')} is not in the matrix (outside the namespaces given with -n?)`,
    );
  return focused;
}

/** The output's estimate, unless there is no limit (--force): then nothing is walked twice. */
function estimated(estimate: () => OutputEstimate, limit: number): OutputEstimate {
  return limit === Infinity ? { bytes: 0, lines: 0, atLeast: true } : estimate();
}

/** What asks a matrix for less output. */
function lessMatrix(classes: number, format: string, byClass: boolean): string[] {
  return [
    ...(byClass
      ? []
      : [
          `--by class (${classes.toLocaleString('en-US')} class${classes === 1 ? '' : 'es'} of endpoints no policy tells apart)`,
        ]),
    '--port PORT',
    '--focus NS/NAME (one workload and its peers)',
    '-n NAMESPACE',
    ...(byClass || format === 'json' ? [] : ['--group-by namespace']),
  ];
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
