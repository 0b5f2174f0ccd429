/**
 * Contracts of the analysis layer: what `matrix`, `check` and `explain` compute, as data that
 * the formatters (text, json, csv, md) turn into output.
 */
import type { IpFamily } from '../net/ip.ts';
import type { Endpoint, Protocol } from '../model/types.ts';
import type { PortSet } from '../semantics/index.ts';
import type { Verdict } from '../semantics/types.ts';
import type { DroppedPolicy } from './dropped-policies.ts';

/** One column of a matrix: a port (number, or a name resolved per destination) and protocol. */
export interface PortQuery {
  readonly port: number | string;
  readonly protocol: Protocol;
}

/** A row (and column) of a matrix: a pod, or a workload standing for its pods. */
export interface MatrixRow {
  /** As text output prints it: `ns/name[Kind]` for a workload (`[Pod]` for a lone pod in the workload view), `ns/name` for a pod. */
  readonly label: string;
  /** `ns/name`: the pod's or the workload's name, as `-o json` prints `from` and `to`. */
  readonly id: string;
  /** `Pod`, or the workload's kind. */
  readonly kind: string;
  readonly namespace: string;
}

/** Who computed a matrix: the reference evaluator, or the compiled tables (classes/compiled-classes.ts). */
export type MatrixEngine = 'reference' | 'compiled';

export interface Matrix {
  /** One endpoint per row: the pod, or a member standing for the row's workload. */
  readonly endpoints: readonly Endpoint[];
  /** What each row is called; `rows[i]` names `endpoints[i]`'s row. */
  readonly rows: readonly MatrixRow[];
  /** Empty when the matrix holds allowed port sets instead of per-port answers. */
  readonly queries: readonly PortQuery[];
  /** allowed(from, to, query): endpoint indexes into `endpoints`, query index into `queries`. */
  allowed(from: number, to: number, query: number): boolean;
  /** Allowed ports between two endpoints (port-set mode only). */
  ports(from: number, to: number): PortSet;
  /**
   * For a cell `allowed` says is not allowed: where it is allowed after all (`2 of 6 pod
   * pairs`), when only some of the pods a row stands for can connect; undefined otherwise.
   */
  partial?(from: number, to: number, query: number): string | undefined;
  /** Port-set mode: ports only some pod pairs of two rows may use (beyond `ports`), and which. */
  partialPorts?(from: number, to: number): { readonly ports: PortSet; readonly where: string } | undefined;
  /**
   * Dual-stack (computed when asked, `byFamily`, and some endpoint has both families): the
   * answer over one address family alone; undefined when the two rows share no such family.
   * `allowed` is true only when every shared family is.
   */
  readonly overFamily?: (from: number, to: number, query: number, family: IpFamily) => boolean | undefined;
  /** Port-set mode, dual-stack: the ports allowed over one family alone (as `overFamily`). */
  readonly portsOverFamily?: (from: number, to: number, family: IpFamily) => PortSet | undefined;
  /**
   * The rows a row may reach on some port over some family, in increasing order (a superset of
   * the connected ones: the cells worth printing in a listing); absent where every row is a
   * candidate. Costs what the row reaches, not the number of rows.
   */
  reachedRows?(from: number): readonly number[];
  /** The same answers per equivalence class: what class outputs print and pictures aggregate. */
  readonly classes?: ClassAnswers;
  readonly stats: {
    readonly classes: number;
    /** Pairs of classes the reference evaluator answered (the compiled engine answers whole rows). */
    readonly evaluations: number;
    readonly millis: number;
    readonly engine: MatrixEngine;
  };
}

/**
 * A matrix's answers per equivalence class (endpoints no policy tells apart share one): a class
 * pair's answer is every member pair's. Enumerating what a class reaches costs what it reaches,
 * not the number of classes, where the engine can (the compiled one).
 */
export interface ClassAnswers {
  /** Class of each of the matrix's endpoints. */
  readonly classOf: Int32Array;
  /** One member per class. */
  readonly representatives: readonly Endpoint[];
  /** Ports class a may use to reach class b: all of them, or (per port) the queried ones, resolved at b. */
  ports(a: number, b: number): PortSet;
  /** Each class b that class a may reach on some port (some queried port), with the ports; in no set order. */
  forEachReached(a: number, visit: (b: number, ports: PortSet) => void): void;
}

export interface CheckResult {
  readonly from: string;
  readonly to: string;
  readonly protocol: Protocol;
  readonly port: number;
  /** The port as the user gave it, when it was a name. */
  readonly portName?: string;
  /** Set when an address given as an IP fixed the family the connection was judged over. */
  readonly family?: IpFamily;
  /** The verdict shown: when a workload was named, a denied pod pair's if any (allowed only when every pair is). */
  readonly verdict: Verdict;
  /** When `from` or `to` named a workload with several pods: how many pod pairs are allowed, and the pairs judged. */
  readonly podPairs?: {
    readonly allowed: number;
    readonly total: number;
    /** One pod pair per pair of equivalence classes. */
    readonly judged: readonly PodPairVerdict[];
  };
  /** Network policies dropped as invalid that would have selected the source (egress) or destination (ingress). */
  readonly droppedPolicies?: readonly DroppedPolicy[];
  /** `--to` named a Service: its port asked for, where it leads, and the backends answered for. */
  readonly service?: ServiceTarget;
  /**
   * A pod to its own address: the connection never leaves its network namespace, so no CNI
   * filters it and no policy applies (the verdict is allowed; its sides say what policy would say).
   */
  readonly self?: true;
}

/** A Service port and where each backend listens for it (`port` undefined: the backend has no such named port). */
export interface ServiceTarget {
  readonly service: string;
  readonly port: number;
  readonly portName?: string;
  readonly protocol: Protocol;
  readonly targetPort: number | string;
  readonly backends: readonly { readonly pod: string; readonly port?: number }[];
}

/** One judged pod pair of a `check` between workloads, standing for `pairs` pod pairs like it. */
export interface PodPairVerdict {
  readonly from: string;
  readonly to: string;
  readonly allowed: boolean;
  readonly pairs: number;
}
