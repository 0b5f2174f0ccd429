/**
 * The JSON API's answers (`/api/*`, docs/SERVE.md) as the server sends them and the page reads
 * them: one module both sides import, so a field renamed or retyped on one side fails the other's
 * type check (`npm run typecheck` checks the server and web/). The server's routes are typed by
 * `ApiAnswers` (src/serve/app.ts), and so are the page's requests (web/src/api.ts).
 *
 * Types only, importing nothing: the page's bundle and type check (web/tsconfig.json, DOM and no
 * Node types) reach it without pulling in the server. Where an answer is a structure of another
 * layer (check's result, lint's report, a flow record), the type here lists the fields the page
 * reads, and the server's route assigns its structure to it, so the two are checked against each
 * other there.
 */

export type HeatmapLevel = 'namespace' | 'workload' | 'pod';

/** A row or column of a heatmap: a namespace, a workload or a pod. */
export interface HeatAxis {
  /** `ns`, `ns/name[Kind]` or `ns/pod`: what drilling down or `/api/check` takes. */
  readonly id: string;
  readonly label: string;
  /** Pods it stands for. */
  readonly pods: number;
}

/** What `/api/heatmap` answers. */
export interface Heatmap {
  readonly level: HeatmapLevel;
  /** `80/TCP`, `http/TCP`, or `any` (allowed on at least one port). */
  readonly port: string;
  readonly rows: readonly HeatAxis[];
  readonly columns: readonly HeatAxis[];
  /**
   * `[row, column, allowed]` for every cell with at least one allowed pod pair: the pod pairs
   * of a cell are `rows[r].pods × columns[c].pods` (less a pod's pair with itself).
   */
  readonly cells: readonly (readonly [number, number, number])[];
  /** Time the aggregation took on the server (the matrix of the port is computed once). */
  readonly millis: number;
  readonly engine: string;
}

/** The input in counts, and the ports the page offers. */
export interface InputSummary {
  readonly version: number;
  /** When this reading finished (ms since the epoch). */
  readonly readAt: number;
  readonly namespaces: number;
  readonly pods: number;
  readonly workloads: number;
  readonly policies: number;
  readonly clusterPolicies: number;
  /** The ordered policies by kind, in words (`2 Calico NetworkPolicies`, `1 cluster policy`). */
  readonly policyKinds: readonly string[];
  /** `80/TCP`, `dns/UDP`…: ports the policies' rules name, most used first. */
  readonly ports: readonly string[];
  /**
   * The port the page opens on: `any`, or for large inputs (allowed port sets cost a port set per
   * pair of pods) the port the policies name most. The server computes its heatmap ahead.
   */
  readonly defaultPort: string;
  /** Whether a diff view exists (`--against`). */
  readonly against: boolean;
}

/** What `/api/summary` answers. */
export interface SummaryAnswer extends InputSummary {
  /** Why the last reading failed (the page shows the previous one), or null. */
  readonly readError: string | null;
  /** The diagnostics' counts in words (`2 errors, 1 warning`). */
  readonly diagnosticCounts: string;
  /** Where observed flows come from (a flow file's path, the agents), or null without any. */
  readonly flows: string | null;
}

/** The data the page shows first, embedded in its document (src/serve/page.ts). */
export interface FirstView {
  readonly summary: SummaryAnswer;
  /** The port the heatmap is for, as the page chooses it: the address's `?port=`, else `summary.defaultPort`. */
  readonly port: string;
  /** `/api/heatmap?level=namespace&port=…`; absent when that port is not one (the API says why). */
  readonly heatmap?: Heatmap;
}

/** A rule of an explanation: one that matched, or one that did not and why. */
export interface RuleNote {
  readonly policy: string;
  /** Index in the policy's ingress or egress list. */
  readonly rule: number;
  readonly reason?: string;
}

/** One side of a check's verdict: egress from the source, or ingress into the destination. */
export interface SideAnswer {
  readonly direction: 'egress' | 'ingress';
  /** The endpoint whose policies decide this side; absent when it is outside the cluster. */
  readonly endpoint?: string;
  readonly allowed: boolean;
  readonly isolated: boolean;
  /** One sentence for people. */
  readonly reason: string;
  readonly policies: readonly string[];
  readonly matches: readonly RuleNote[];
  readonly misses: readonly RuleNote[];
  /** The tiers visited, in order, and what each decided. */
  readonly walk: readonly {
    readonly tier: string;
    /** The tier as people are shown it, where its name would mislead (src/semantics/types.ts). */
    readonly shownAs?: string;
    readonly outcome: string;
    readonly policies: readonly string[];
  }[];
}

/** What `/api/check` answers: `palisade check -o json` (these are the fields the page reads), and its text. */
export interface CheckAnswer {
  readonly from: string;
  readonly to: string;
  readonly protocol: string;
  readonly port: number;
  /** The port as asked, when it was a name. */
  readonly portName?: string;
  readonly verdict: { readonly allowed: boolean; readonly egress: SideAnswer; readonly ingress: SideAnswer };
  /** What `palisade check` prints. */
  readonly text: string;
}

/** What `/api/why` answers: `/api/check` for one pod pair of the cell asked about. */
interface WhyAnswer extends CheckAnswer {
  readonly cell: { readonly level: HeatmapLevel; readonly from: string; readonly to: string };
}

/** The `/api/check` question a flow is: its pods by name, or addresses the input has no pod for. */
interface FlowQuestion {
  readonly from: string;
  readonly to: string;
  readonly port: string;
  readonly protocol: string;
}

/** The rule that decided one side of a flow (src/flows/types.ts), the fields the page reads. */
interface FlowRule {
  readonly direction: 'egress' | 'ingress';
  readonly tier: string;
  readonly outcome: string;
  readonly policy?: string;
  readonly rule?: number;
}

/** What serve makes of a flow record: its rules in `check`'s words, and the question that explains it. */
export interface FlowJudgement {
  /** `decidedBy` in `check`'s words (`egress: allowed by shop/api egress[0]; …`). */
  readonly decidedText: string;
  /** The staged rules in the same words, when the record has a `staged` part. */
  readonly stagedText?: string;
  /** What `/api/check` is asked to explain it; null when serve cannot ask (said in `disagreement`). */
  readonly check: FlowQuestion | null;
  /** Where serve's answer differs from the agent's (or serve cannot judge it), in one line. */
  readonly disagreement?: string;
}

/** One flow as `/api/flows` answers it: the flow record (src/flows/types.ts FlowRecord) and serve's judgement. */
export interface ServedFlow extends FlowJudgement {
  readonly src: { readonly ip: string; readonly pod?: string };
  readonly dst: { readonly ip: string; readonly pod?: string };
  readonly protocol: string;
  readonly port: number;
  readonly verdict: 'allowed' | 'denied';
  readonly decidedBy: readonly FlowRule[];
  readonly count: number;
  readonly sampled?: boolean;
  readonly node?: string;
  readonly staged?: { readonly verdict: 'allowed' | 'denied'; readonly decidedBy: readonly FlowRule[] };
  readonly mismatch?: string;
}

/** A flow source that cannot be read right now, and why (the last records read are still shown). */
export interface FlowProblem {
  readonly source: string;
  readonly message: string;
}

/** A diagnostic as the API sends it (docs/DIAGNOSTICS.md). */
interface DiagnosticAnswer {
  readonly code: string;
  readonly severity: 'error' | 'warning' | 'info';
  readonly message: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly object?: string;
  readonly path?: string;
}

/** What `/api/flows` answers. */
export interface FlowsAnswer {
  /** Counts up whenever the observed flows change (the `flows` event says the new one). */
  readonly version: number;
  readonly source: string;
  /** Every record the source holds. */
  readonly total: number;
  /** Flows the filters select (`flows` holds the first of them, up to the limit asked). */
  readonly matched: number;
  readonly flows: readonly ServedFlow[];
  readonly problems: readonly FlowProblem[];
  /** Problems of a flow file's lines. */
  readonly diagnostics: readonly DiagnosticAnswer[];
}

/** Observed traffic between two nodes of a drawn graph. */
export interface ObservedPair {
  readonly from: string;
  readonly to: string;
  /** Connections the datapaths allowed, and denied, summed over the records. */
  readonly allowed: number;
  readonly denied: number;
  /** Index of the graph's arrow between them, when there is one (allowed by the input). */
  readonly edge?: number;
}

export interface ObservedOnGraph {
  readonly pairs: readonly ObservedPair[];
  /** Records whose ends are not nodes of this graph (folded, addresses, another port). */
  readonly unplaced: number;
}

/** What `/api/graph` answers: nodes and edges, the drawing with `svg=1`, the observed traffic with `flows=1`. */
export interface GraphAnswer {
  readonly title: string;
  readonly nodes: readonly {
    readonly id: string;
    readonly label: string;
    readonly kind: 'endpoint' | 'namespace' | 'addresses';
    readonly namespace?: string;
  }[];
  readonly edges: readonly { readonly from: string; readonly to: string; readonly label: string }[];
  /** With `flows=1` and a flow source. */
  readonly observed?: ObservedOnGraph;
  /** With `svg=1`: the drawing. */
  readonly svg?: string;
}

/** What `/api/lint` answers: `palisade lint -o json` (docs/LINT.md; these are the fields the page reads). */
export interface LintAnswer {
  readonly findings: readonly {
    readonly code: string;
    readonly severity: 'error' | 'warning' | 'info';
    readonly message: string;
    readonly hint: string;
    readonly file: string;
    readonly line: number;
    readonly column: number;
    readonly object?: string;
    readonly path?: string;
  }[];
  readonly summary: { readonly error: number; readonly warning: number; readonly info: number };
  readonly skipped: readonly { readonly check: string; readonly reason: string }[];
}

/** What `/api/diagnostics` answers. */
interface DiagnosticsAnswer {
  readonly diagnostics: readonly DiagnosticAnswer[];
}

/** One connection of a diff, as `/api/diff` answers it. */
interface DiffConnectionAnswer {
  readonly from: string;
  readonly fromKind: string;
  readonly to: string;
  readonly toKind: string;
  readonly change: 'added' | 'removed' | 'changed';
  /** The port sets before and after, in words. */
  readonly before: string;
  readonly after: string;
  /** The objects whose change made this one. */
  readonly causes: readonly string[];
}

/** What `/api/diff` answers: `palisade diff -o json` (these are the fields the page reads). */
export interface DiffAnswer {
  readonly endpoints: {
    readonly added: readonly { readonly id: string; readonly kind: string }[];
    readonly removed: readonly { readonly id: string; readonly kind: string }[];
  };
  readonly objects: readonly { readonly object: string; readonly change: string }[];
  readonly connections: readonly DiffConnectionAnswer[];
  readonly summary: { readonly added: number; readonly removed: number; readonly changed: number };
}

/** What `/api/object` answers: where an object named in an explanation or finding came from. */
export interface ObjectSource {
  /** `Kind ns/name`, or `Kind name` for cluster-scoped kinds. */
  readonly object: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** The object as read, written as YAML. */
  readonly yaml: string;
}

/** The data of the server-sent events `snapshot` (the input was read again) and `flows` (the observed flows changed). */
export interface VersionEvent {
  readonly version: number;
}

/** What every endpoint answers with a 4xx or 5xx status. */
export interface ErrorAnswer {
  readonly error: string;
}

/**
 * Each JSON endpoint and its answer: the server registers its routes by these paths and the page
 * asks by them, so both are checked against the same type. `/api/matrix` is written by the
 * matrix's JSON writer (`palisade matrix -o json`) and the page does not read it.
 */
export interface ApiAnswers {
  '/api/summary': SummaryAnswer;
  '/api/heatmap': Heatmap;
  '/api/matrix': unknown;
  '/api/why': WhyAnswer;
  '/api/check': CheckAnswer;
  '/api/graph': GraphAnswer;
  '/api/flows': FlowsAnswer;
  '/api/lint': LintAnswer;
  '/api/diagnostics': DiagnosticsAnswer;
  '/api/diff': DiffAnswer;
  '/api/object': ObjectSource;
}

export type ApiPath = keyof ApiAnswers;
