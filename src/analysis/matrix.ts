/**
 * Reachability between every ordered pair of endpoints (self pairs included), computed once per
 * pair of equivalence classes and shared by every pair of members — by the reference evaluator
 * (a bit per class pair and port, or a port set id per class pair: for few classes), or from the
 * compiled tables as sparse answers (classes/compiled-classes.ts: the pairs that may connect,
 * found in time that follows them), which the automatic choice takes wherever it is exact and
 * the classes are many. Either way the result also answers per class (`Matrix.classes`), for
 * the outputs that print classes and the pictures that aggregate them.
 *
 * Dual-stack (`byFamily`): a pair counts as allowed only when every family both ends share
 * allows it; where the families disagree (an IPv4-only ipBlock), the answers over each family
 * are computed as well — the same passes restricted to one family — and kept beside.
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import {
  indexCluster,
  isNoPorts,
  portSetHas,
  portSetOf,
  resolveNamedPort,
  type PortSet,
} from '../semantics/index.ts';
import type { EvaluateOptions } from '../semantics/types.ts';
import type { IpFamily } from '../net/ip.ts';
import { familyAnswers, familyMasks } from './family-answers.ts';
import { hasBit, wordsFor } from './bit-rows.ts';
import { CompiledClasses } from './classes/compiled-classes.ts';
import { endpointClasses } from './equivalence.ts';
import {
  portSetIds,
  queryBits,
  referencePorts,
  PortSetTable,
  type ReferenceContext,
} from './reference-classes.ts';
import type { ClassAnswers, Matrix, MatrixEngine, PortQuery } from './types.ts';
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
function chooseEngine(classes: number, options: MatrixOptions): MatrixEngine {
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
  const context: ReferenceContext = {
    index: indexCluster(cluster),
    representatives,
    options,
    evaluations: 0,
  };
  const answers =
    engine === 'compiled' ? compiledAnswers(cluster, context, options) : referenceAnswers(context, options);
  const { queries } = options;
  const byClass: ClassAnswers = { classOf, representatives, ...answers.byClass };
  const stats = (): Matrix['stats'] => ({
    classes,
    evaluations: context.evaluations,
    millis: performance.now() - started,
    engine,
  });
  const cls = (endpoint: number): number => classOf[endpoint] as number;
  let rowsByClass: number[][] | undefined;
  const reachedRows = (from: number): number[] => {
    rowsByClass ??= membersByClass(classOf, classes);
    const rows: number[] = [];
    answers.candidates(cls(from), (b) => {
      for (const row of (rowsByClass as number[][])[b] as number[]) rows.push(row);
    });
    return rows.sort((x, y) => x - y);
  };
  return {
    ...answers.families?.(classOf),
    endpoints,
    rows: endpoints.map(endpointRow),
    queries,
    classes: byClass,
    reachedRows,
    allowed: (from, to, q) => answers.allowed(cls(from), cls(to), q),
    ports:
      queries.length > 0
        ? () => {
            throw new Error('matrix was computed per port; port sets are not available');
          }
        : (from, to) => answers.byClass.ports(cls(from), cls(to)),
    stats: stats(),
  };
}

/** Class-pair cells per query up to which `allowed` is remembered densely (one byte each). */
const MEMO_CELLS = 1 << 24;

/**
 * A per-port answer remembered per class pair when the classes are few: a reader of every pod
 * pair (10⁸ of them on shape (b), in 10 classes) asks the same class pair millions of times, and
 * the sparse answer costs a search and a keyed lookup each time — 90 s against a bit's read.
 * Beyond MEMO_CELLS (classes in the thousands) pairs are asked about rarely twice, and nothing is kept.
 */
function memoizedPerCell(
  n: number,
  queries: number,
  answer: (a: number, b: number, q: number) => boolean,
): (a: number, b: number, q: number) => boolean {
  const cells = n * n * queries;
  if (cells === 0 || cells > MEMO_CELLS) return answer;
  const memo = new Uint8Array(cells); // 0 not asked yet, 1 denied, 2 allowed
  return (a, b, q) => {
    const cell = (q * n + a) * n + b;
    let known = memo[cell] as number;
    if (known === 0) memo[cell] = known = answer(a, b, q) ? 2 : 1;
    return known === 2;
  };
}

/** The endpoints of each class, in order. */
function membersByClass(classOf: Int32Array, classes: number): number[][] {
  const members: number[][] = Array.from({ length: classes }, () => []);
  classOf.forEach((cls, endpoint) => (members[cls] as number[]).push(endpoint));
  return members;
}

/** What an engine answers, per class. */
interface EngineAnswers {
  readonly byClass: Pick<ClassAnswers, 'ports' | 'forEachReached'>;
  /** Classes b that class a may reach over some family (a superset of what it reaches), once each. */
  candidates(a: number, visit: (b: number) => void): void;
  /** Per port mode: whether class a reaches class b on query q. */
  allowed(a: number, b: number, q: number): boolean;
  /** Dual-stack members of the matrix, for endpoints in classes `classOf` (when asked and needed). */
  readonly families?: (classOf: Int32Array) => Pick<Matrix, 'overFamily' | 'portsOverFamily'>;
}

/** The queried ports allowed between two classes, as a port set (named ports resolved at the destination). */
function queriedPorts(
  queries: readonly PortQuery[],
  destination: Endpoint,
  allowed: (q: number) => boolean,
): PortSet {
  return portSetOf(
    queries.flatMap((query, q) => {
      const port =
        typeof query.port === 'number'
          ? query.port
          : resolveNamedPort({ kind: 'endpoint', endpoint: destination }, query.port, query.protocol);
      return port !== undefined && allowed(q) ? [{ protocol: query.protocol, from: port, to: port }] : [];
    }),
  );
}

/** Every pair from the reference evaluator (few classes). */
function referenceAnswers(context: ReferenceContext, options: MatrixOptions): EngineAnswers {
  const { representatives } = context;
  const n = representatives.length;
  const { queries } = options;
  const masks = familyMasks(representatives);
  // The family passes report no progress: the bar follows the combined pass.
  const { onProgress: _, ...quietOptions } = options;
  const quiet: ReferenceContext = { ...context, options: quietOptions };
  const dualStack = options.byFamily === true && masks.some((m) => m === 3);
  const reached =
    (ports: (a: number, b: number) => PortSet) => (a: number, visit: (b: number, p: PortSet) => void) => {
      for (let b = 0; b < n; b++) {
        const p = ports(a, b);
        if (!isNoPorts(p)) visit(b, p);
      }
    };
  const every = (_: number, visit: (b: number) => void): void => {
    for (let b = 0; b < n; b++) visit(b);
  };
  if (queries.length > 0) {
    const words = wordsFor(n);
    const bits = queries.map((query) => queryBits(context, query));
    const allowed = (a: number, b: number, q: number): boolean =>
      hasBit(bits[q] as Uint32Array, a * words, b);
    const ports = (a: number, b: number): PortSet =>
      queriedPorts(queries, representatives[b] as Endpoint, (q) => allowed(a, b, q));
    return {
      allowed,
      candidates: every,
      byClass: { ports, forEachReached: reached(ports) },
      ...(dualStack && {
        families: (classOf) =>
          familyAnswers(classOf, masks, (family) => ({
            bits: queries.map((query) => queryBits(quiet, query, family)),
          })).members,
      }),
    };
  }
  const { setOf, sets } = portSetIds(context);
  const ports = (a: number, b: number): PortSet => sets[setOf[a * n + b] as number] as PortSet;
  return {
    allowed: () => false,
    candidates: every,
    byClass: { ports, forEachReached: reached(ports) },
    ...(dualStack && {
      families: (classOf) =>
        familyAnswers(classOf, masks, (family) => ({ ports: portSetIds(quiet, family) })).members,
    }),
  };
}

/**
 * From the compiled tables (classes/compiled-classes.ts), sparse; pairs with a class without
 * addresses from the reference. Per port, the port sets are computed over the queried ports only.
 */
function compiledAnswers(cluster: Cluster, context: ReferenceContext, options: MatrixOptions): EngineAnswers {
  const { representatives } = context;
  const n = representatives.length;
  const { queries } = options;
  const portsOfInterest =
    queries.length === 0
      ? undefined
      : portSetOf(
          queries.flatMap((query) =>
            (typeof query.port === 'number'
              ? [query.port]
              : representatives.map((rep) =>
                  resolveNamedPort({ kind: 'endpoint', endpoint: rep }, query.port as string, query.protocol),
                )
            ).flatMap((port) =>
              port === undefined ? [] : [{ protocol: query.protocol, from: port, to: port }],
            ),
          ),
        );
  const compiled = new CompiledClasses(cluster, representatives, {
    ...(options.allowNodeLocal !== undefined ? { allowNodeLocal: options.allowNodeLocal } : {}),
    ...(portsOfInterest ? { portsOfInterest } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  // Pairs with a class without addresses: the reference, per family too when dual-stack is asked.
  const masks = familyMasks(representatives);
  const dualStack = options.byFamily === true && masks.some((m) => m === 3);
  const addressless = representatives.flatMap((_, c) => (compiled.hasAddress(c) ? [] : [c]));
  const table = new PortSetTable();
  const overrides = new Map<number, number>();
  const familyOverrides: Record<IpFamily, Map<number, number | undefined>> = { 4: new Map(), 6: new Map() };
  const addReference = (a: number, b: number): void => {
    const key = a * n + b;
    if (overrides.has(key)) return;
    overrides.set(key, table.id(referencePorts(context, a, b, undefined, masks) as PortSet));
    if (dualStack)
      for (const family of [4, 6] as const) {
        const ports = referencePorts(context, a, b, family, masks);
        familyOverrides[family].set(key, ports === undefined ? undefined : table.id(ports));
      }
  };
  for (const a of addressless) for (let b = 0; b < n; b++) addReference(a, b);
  for (let a = 0; a < n; a++) for (const b of addressless) addReference(a, b);

  const allPorts = (a: number, b: number): PortSet => {
    const id = overrides.get(a * n + b);
    return id === undefined ? compiled.ports(a, b) : (table.sets[id] as PortSet);
  };
  const has = (ports: PortSet, query: PortQuery, destination: Endpoint): boolean => {
    const port =
      typeof query.port === 'number'
        ? query.port
        : resolveNamedPort({ kind: 'endpoint', endpoint: destination }, query.port, query.protocol);
    return port !== undefined && portSetHas(ports, query.protocol, port);
  };
  const allowed = memoizedPerCell(n, queries.length, (a, b, q) =>
    has(allPorts(a, b), queries[q] as PortQuery, representatives[b] as Endpoint),
  );
  const ports =
    queries.length === 0
      ? allPorts
      : (a: number, b: number): PortSet => {
          const all = allPorts(a, b);
          return queriedPorts(queries, representatives[b] as Endpoint, (q) =>
            has(all, queries[q] as PortQuery, representatives[b] as Endpoint),
          );
        };
  const candidates = (a: number, visit: (b: number) => void): void => {
    if (compiled.hasAddress(a)) {
      compiled.forEachCandidate(a, visit);
      for (const b of addressless) visit(b);
    } else for (let b = 0; b < n; b++) visit(b);
  };
  const forEachReached = (a: number, visit: (b: number, p: PortSet) => void): void =>
    candidates(a, (b) => {
      const p = ports(a, b);
      if (!isNoPorts(p)) visit(b, p);
    });
  const familyPorts = (a: number, b: number, family: IpFamily): PortSet | undefined => {
    const key = a * n + b;
    if (familyOverrides[family].has(key)) {
      const id = familyOverrides[family].get(key);
      return id === undefined ? undefined : table.sets[id];
    }
    return compiled.portsOverFamily(a, b, family);
  };
  return {
    allowed,
    candidates,
    byClass: { ports, forEachReached },
    ...(dualStack && {
      families: (classOf) => ({
        overFamily: (from, to, q, family) => {
          const a = classOf[from] as number;
          const b = classOf[to] as number;
          const p = familyPorts(a, b, family);
          return p === undefined
            ? undefined
            : has(p, queries[q] as PortQuery, representatives[b] as Endpoint);
        },
        portsOverFamily: (from, to, family) =>
          familyPorts(classOf[from] as number, classOf[to] as number, family),
      }),
    }),
  };
}
