/**
 * One reading of the input (and of `--against`), and everything the page asks about it,
 * computed on first use and kept until the next reading replaces the snapshot: the heatmap's
 * matrices, lint, the diff, the graph. The API answers from a snapshot, never from a half-read
 * input, so a request racing a file change sees the old state or the new one, whole.
 */
import {
  checkConnection,
  computeViewMatrix,
  diffConnectivity,
  formatCheckText,
  focusRows,
  graphSvg,
  layoutSeconds,
  lintCluster,
  pictureGraph,
  objectLocator,
  parsePortQuery,
  portAtDestination,
  QUERY_SPELLING,
  PLAIN,
  resolveAddress,
  type CheckResult,
  type ConnectivityDiff,
  type ConnectivityGraph,
  type LintReport,
} from '../analysis/index.ts';
import type { LoadResult } from '../ingest/types.ts';
import type { Endpoint, Semantics } from '../model/types.ts';
import type { PortQuery } from '../analysis/types.ts';
import { Reachability } from './reachability.ts';
import type { ObjectSource } from './api-types.ts';
import { objectSource } from './sources.ts';

/** A request the client got wrong: answered with 400 and the message. */
export class RequestError extends Error {}

export class Snapshot {
  private reachabilityCache?: Reachability;
  private lintCache?: LintReport;
  private diffCache?: ConnectivityDiff;
  private readonly graphs = new Map<string, ConnectivityGraph>();
  private readonly svgs = new WeakMap<ConnectivityGraph, string>();

  constructor(
    /** Counts up with every reading; the page compares it with what it shows. */
    readonly version: number,
    readonly input: LoadResult,
    readonly against: LoadResult | undefined,
    readonly semantics: Semantics,
    /** When this reading finished (ms since the epoch). */
    readonly readAt: number,
  ) {}

  get reachability(): Reachability {
    return (this.reachabilityCache ??= new Reachability(this.input.cluster, this.semantics));
  }

  get lint(): LintReport {
    return (this.lintCache ??= lintCluster(this.input.cluster, {
      semantics: this.semantics,
      locator: objectLocator(this.input.rawObjects),
      diagnostics: this.input.diagnostics,
    }));
  }

  /** The diff from `--against` (old) to the input (new); undefined without `--against`. */
  get diff(): ConnectivityDiff | undefined {
    if (!this.against) return undefined;
    return (this.diffCache ??= diffConnectivity(this.against.cluster, this.input.cluster, {
      semantics: this.semantics,
    }));
  }

  /**
   * The graph the page draws: per workload when that fits a picture, else per namespace,
   * brought to a readable size; with `namespace`, that namespace's workloads and the endpoints
   * they connect with, their namespaces' boxes around them (workloads on demand).
   */
  graph(
    query: PortQuery | undefined,
    groupBy: 'auto' | 'workload' | 'namespace',
    namespace?: string,
  ): ConnectivityGraph {
    const key = `${query ? `${query.protocol}/${query.port}` : 'any'} ${groupBy} ${namespace ?? ''}`;
    let graph = this.graphs.get(key);
    if (!graph) {
      const cluster = this.input.cluster;
      let endpoints = cluster.endpoints;
      if (namespace !== undefined) {
        const own = new Set(endpoints.filter((e) => e.namespace === namespace));
        if (own.size === 0) throw new RequestError(`no pods or workloads in namespace ${namespace}`);
        // The namespace's workloads and their peers: the rows connected with any of them.
        const matrix = computeViewMatrix(cluster, {
          by: 'workload',
          queries: query ? [query] : [],
          semantics: this.semantics,
          engine: 'auto',
        });
        const focus = new Set(
          matrix.rows.flatMap((row, i) =>
            ((row as { members?: readonly Endpoint[] }).members ?? []).some((e) => own.has(e)) ? [i] : [],
          ),
        );
        endpoints = focusRows(matrix, focus).flatMap(
          (i) => (matrix.rows[i] as { members?: readonly Endpoint[] }).members ?? [],
        );
      }
      graph = pictureGraph(cluster, {
        endpoints,
        queries: query ? [query] : [],
        semantics: this.semantics,
        groupBy: groupBy === 'auto' ? undefined : groupBy,
      });
      this.graphs.set(key, graph);
    }
    return graph;
  }

  /** The graph drawn by Graphviz (the same drawing as `matrix -o svg`), computed once per graph. */
  async graphSvg(graph: ConnectivityGraph): Promise<string> {
    const known = this.svgs.get(graph);
    if (known !== undefined) return known;
    {
      // A layout that would take minutes is not started: the page says what to ask instead.
      if (layoutSeconds(graph) > 30)
        throw new RequestError(
          `drawing ${graph.nodes.length} nodes and ${graph.edges.length} edges would take minutes: pick a port or a namespace`,
        );
      // The page says the title in its caption: the drawing goes without it.
      const svg = await graphSvg({ ...graph, title: '' });
      this.svgs.set(graph, svg);
      return svg;
    }
  }

  /** What `palisade check -o json` answers, and its text; `protocolText` when the request gave one. */
  check(from: string, to: string, portText: string, protocolText?: string): CheckResult & { text: string } {
    const cluster = this.input.cluster;
    const query = parsePortQuery(portText, {
      ...(protocolText !== undefined ? { protocol: protocolText } : {}),
      spelling: QUERY_SPELLING,
    });
    if (!query.ok) throw new RequestError(query.message);
    const { protocol } = query.query;
    const source = resolveAddress(cluster, from);
    const destination = resolveAddress(cluster, to);
    if (!source.ok) throw new RequestError(`from: ${source.message}`);
    if (!destination.ok) throw new RequestError(`to: ${destination.message}`);
    // Refused as `palisade check` refuses it (its message, with the API's names of the fields):
    // no connection goes from one address family to the other, so a verdict would mislead.
    if (
      source.family !== undefined &&
      destination.family !== undefined &&
      source.family !== destination.family
    )
      throw new RequestError(
        `from is an IPv${source.family} address and to an IPv${destination.family} one: a connection has one address family`,
      );
    const destinationPort = portAtDestination(
      destination.address,
      query.query,
      QUERY_SPELLING,
      protocolText !== undefined,
    );
    if (!destinationPort.ok) throw new RequestError(`to: ${destinationPort.message}`);
    const { port, portName } = destinationPort;
    const result = checkConnection(
      cluster,
      { from: source, to: destination, protocol, port, ...(portName ? { portName } : {}) },
      { semantics: this.semantics },
    );
    return { ...result, text: formatCheckText(result, PLAIN) };
  }

  /** An object's file, line and text, for the links of explanations and findings. */
  source(object: string): ObjectSource | undefined {
    return (
      objectSource(this.input.rawObjects, object) ?? objectSource(this.against?.rawObjects ?? [], object)
    );
  }
}

/** `80`, `80/TCP`, `http/udp`, `any` (or nothing) → a port query, or undefined for any port. */
export function parsePort(text: string | undefined): PortQuery | undefined {
  if (!text || text === 'any') return undefined;
  const parsed = parsePortQuery(text, { spelling: QUERY_SPELLING });
  if (!parsed.ok) throw new RequestError(parsed.message);
  return parsed.query;
}
