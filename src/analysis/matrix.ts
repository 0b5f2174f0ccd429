/**
 * Reachability between every ordered pair of endpoints (self pairs included), computed once per
 * pair of equivalence classes and shared by every pair of members — by the reference evaluator,
 * or from the compiled tables a row at a time (compiled-matrix.ts), which the automatic choice
 * takes wherever it is exact and the classes are many.
 *
 * Answers are kept compactly: a bit per class pair and port, and for port sets a small number
 * per class pair naming one of the distinct sets (a few dozen in practice) — not an object per
 * pair, which at 2,000 classes was four million of them.
 *
 * Dual-stack (`byFamily`): a pair counts as allowed only when every family both ends share
 * allows it; where the families disagree (an IPv4-only ipBlock), the answers over each family
 * are computed as well — the same passes restricted to one family — and kept beside.
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import {
  allowedPorts,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  sidePorts,
  indexCluster,
  isAllowed,
  portSetOf,
  resolveNamedPort,
  type ClusterIndex,
  type PortSet,
} from '../semantics/index.ts';
import type { Address, EvaluateOptions } from '../semantics/types.ts';
import type { IpFamily } from '../net/ip.ts';
import { familyAnswers, familyMasks, sharesFamily, type FamilyAnswers } from './family-answers.ts';
import { CompiledMatrix } from './compiled-matrix.ts';
import { hasBit, setBit, wordsFor } from './bit-rows.ts';
import { endpointClasses } from './equivalence.ts';
import type { Matrix, MatrixEngine, PortQuery } from './types.ts';
import { endpointRow } from './workload-view.ts';

export interface MatrixOptions extends EvaluateOptions {
  /** Port/protocol columns; empty computes allowed port sets per pair instead. */
  readonly queries: readonly PortQuery[];
  /** Only endpoints in these namespaces (all when absent or empty). */
  readonly namespaces?: readonly string[];
  /** Exactly these endpoints (the namespaces option is then ignored); default: the cluster's. */
  readonly endpoints?: readonly Endpoint[];
  /** Group endpoints into equivalence classes (default true). False evaluates every pair: for cross-checks and benchmarks. */
  readonly useClasses?: boolean;
  /**
   * Who decides: the reference evaluator, the compiled tables (same verdicts; endpoints without
   * addresses still go to the reference), or `auto` (default `reference` here; the CLI passes
   * `auto`): compiled for v1 semantics once there are enough classes for it to pay.
   */
  readonly engine?: MatrixEngine | 'auto';
  /**
   * Dual-stack: also answer each address family alone (`Matrix.overFamily`, `portsOverFamily`),
   * so a pair allowed over IPv4 and denied over IPv6 can say so. Only computed when some
   * endpoint has addresses of both families; it then costs up to three passes instead of one.
   */
  readonly byFamily?: boolean;
  /** Called with (done, total) steps, for progress display. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** Below this many classes the reference is as fast as building the compiled tables. */
const COMPILED_FROM_CLASSES = 64;

/** The endpoints a matrix covers: all, or those in the given namespaces (none given: all). */
export function matrixEndpoints(cluster: Cluster, namespaces: readonly string[] | undefined): Endpoint[] {
  const wanted = namespaces?.length ? new Set(namespaces) : undefined;
  return cluster.endpoints.filter((e) => !wanted || wanted.has(e.namespace));
}

/** The engine `auto` takes for this many classes and these options. */
export function chooseEngine(classes: number, options: MatrixOptions): MatrixEngine {
  const asked = options.engine ?? 'reference';
  if (asked !== 'auto') return asked;
  const v1 = (options.semantics ?? 'v1') === 'v1';
  return v1 && classes >= COMPILED_FROM_CLASSES ? 'compiled' : 'reference';
}

export function computeMatrix(cluster: Cluster, options: MatrixOptions): Matrix {
  const started = performance.now();
  const endpoints = options.endpoints ?? matrixEndpoints(cluster, options.namespaces);
  const { classOf, representatives } = endpointClasses(cluster, endpoints, options.useClasses ?? true);
  const classes = representatives.length;
  const engine = chooseEngine(classes, options);
  const context: Context = {
    index: indexCluster(cluster),
    representatives,
    options,
    compiled: engine === 'compiled' ? new CompiledMatrix(cluster, representatives, options) : undefined,
    evaluations: 0,
  };
  const queries = options.queries;
  const words = wordsFor(classes);
  const masks = familyMasks(representatives);
  const families: FamilyAnswers | undefined =
    options.byFamily && masks.some((m) => m === 3)
      ? familyAnswers(classOf, masks, (family) => {
          // The family passes report no progress: the bar follows the combined pass.
          const { onProgress: _, ...quietOptions } = options;
          const quiet = { ...context, options: quietOptions };
          return queries.length > 0
            ? { bits: queries.map((query) => queryBits(quiet, query, family)) }
            : { ports: portSetIds(quiet, family) };
        })
      : undefined;
  // Progress: per class row from the reference, per port column (or atom) from the compiled tables.
  if (queries.length > 0) {
    const answers = queries.map((query, q) => {
      const bits = queryBits(context, query);
      if (context.compiled) options.onProgress?.(q + 1, queries.length);
      return bits;
    });
    return {
      ...families?.members,
      endpoints,
      rows: endpoints.map(endpointRow),
      queries,
      allowed: (from, to, q) =>
        hasBit(answers[q] as Uint32Array, (classOf[from] as number) * words, classOf[to] as number),
      ports: () => {
        throw new Error('matrix was computed per port; port sets are not available');
      },
      stats: { classes, evaluations: context.evaluations, millis: performance.now() - started, engine },
    };
  }
  const { setOf, sets } = portSetIds(context);
  return {
    ...families?.members,
    endpoints,
    rows: endpoints.map(endpointRow),
    queries,
    allowed: () => false,
    ports: (from, to) =>
      sets[setOf[(classOf[from] as number) * classes + (classOf[to] as number)] as number] as PortSet,
    stats: { classes, evaluations: context.evaluations, millis: performance.now() - started, engine },
  };
}

interface Context {
  readonly index: ClusterIndex;
  readonly representatives: readonly Endpoint[];
  readonly options: MatrixOptions;
  readonly compiled: CompiledMatrix | undefined;
  evaluations: number;
}

const at = (endpoint: Endpoint): Extract<Address, { kind: 'endpoint' }> => ({ kind: 'endpoint', endpoint });

/** One port column as a bit per class pair (row-major); over one address family when given. */
function queryBits(context: Context, query: PortQuery, family?: IpFamily): Uint32Array {
  const { representatives, compiled, options } = context;
  const n = representatives.length;
  const words = wordsFor(n);
  const bits = compiled?.portBits(query.protocol, query.port, family) ?? new Uint32Array(n * words);
  const inFamily = family === undefined ? {} : { family };
  referencePairs(context, (a, b, src, dst) => {
    const port =
      typeof query.port === 'number' ? query.port : resolveNamedPort(dst, query.port, query.protocol);
    if (
      port !== undefined &&
      isAllowed(context.index, { src, dst, protocol: query.protocol, port, ...inFamily }, options)
    )
      setBit(bits, a * words, b);
  });
  return bits;
}

/**
 * The class pairs the reference evaluator answers: all of them, or with the compiled engine
 * those where either class has no address (a workload from a repository).
 */
function referencePairs(
  context: Context,
  visit: (a: number, b: number, src: Address, dst: Address) => void,
): void {
  const { representatives, compiled } = context;
  const n = representatives.length;
  const addresses = representatives.map((_, c) => !compiled || compiled.hasAddress(c));
  const addressless = addresses.flatMap((has, c) => (has ? [] : [c]));
  const pair = (a: number, b: number): void => {
    context.evaluations++;
    visit(a, b, at(representatives[a] as Endpoint), at(representatives[b] as Endpoint));
  };
  if (!compiled) {
    for (let a = 0; a < n; a++) {
      for (let b = 0; b < n; b++) pair(a, b);
      context.options.onProgress?.(a + 1, n);
    }
    return;
  }
  for (const a of addressless) for (let b = 0; b < n; b++) pair(a, b);
  for (let a = 0; a < n; a++) if (addresses[a]) for (const b of addressless) pair(a, b);
}

/**
 * Port sets per class pair as ids into a list of distinct sets (over one address family when
 * given). From the compiled tables: one verdict pass per port atom, each pair's pattern of
 * allowed atoms interned as it grows.
 */
function portSetIds(context: Context, family?: IpFamily): { setOf: Uint32Array; sets: PortSet[] } {
  const { representatives, compiled, options } = context;
  const n = representatives.length;
  const sets: PortSet[] = [];
  const idByText = new Map<string, number>();
  const intern = (set: PortSet): number => {
    const text = formatPortSet(set);
    let id = idByText.get(text);
    if (id === undefined) {
      idByText.set(text, (id = sets.length));
      sets.push(set);
    }
    return id;
  };
  const setOf = new Uint32Array(n * n);
  if (compiled) {
    const atoms = compiled.portAtoms();
    // Patterns: 0 is "no atom"; pattern p plus atom i is child(p, i), numbered on first use.
    const parent: number[] = [0];
    const atomOf: number[] = [-1];
    const child = new Map<number, number>();
    const words = wordsFor(n);
    atoms.forEach((atom, i) => {
      const bits = compiled.portBits(atom.protocol, atom.from, family);
      for (let a = 0; a < n; a++)
        for (let b = 0; b < n; b++) {
          if (!hasBit(bits, a * words, b)) continue;
          const from = setOf[a * n + b] as number;
          const key = from * atoms.length + i;
          let next = child.get(key);
          if (next === undefined) {
            child.set(key, (next = parent.length));
            parent.push(from);
            atomOf.push(i);
          }
          setOf[a * n + b] = next;
        }
      options.onProgress?.(i + 1, atoms.length);
    });
    const setIdOfPattern = parent.map((_, pattern) => {
      const entries: typeof atoms = [];
      for (let p = pattern; p !== 0; p = parent[p] as number) {
        const atom = atoms[atomOf[p] as number];
        if (atom) entries.push(atom);
      }
      return intern(portSetOf(entries));
    });
    for (let i = 0; i < setOf.length; i++) setOf[i] = setIdOfPattern[setOf[i] as number] as number;
  }
  const masks = family === undefined ? [] : familyMasks(representatives);
  referencePairs(context, (a, b, src, dst) => {
    const ports =
      family === undefined
        ? allowedPorts(context.index, src, dst, options)
        : sharesFamily(masks[a] as number, masks[b] as number, family)
          ? intersectPorts(
              sidePorts(context.index, src, dst, 'egress', family, options),
              sidePorts(context.index, src, dst, 'ingress', family, options),
            )
          : EMPTY_PORTS;
    setOf[a * n + b] = intern(ports);
  });
  return { setOf, sets };
}
