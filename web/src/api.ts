/**
 * The page's calls to the server's JSON API (docs/SERVE.md): GET only, same origin.
 */
export class ApiError extends Error {}

export async function api<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== '') params.set(key, value);
  const url = params.size ? `${path}?${params.toString()}` : path;
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new ApiError(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

/** The server's data shapes the page reads (a subset of src/serve/types.ts and the CLI's JSON). */
export interface Summary {
  readonly version: number;
  readonly namespaces: number;
  readonly pods: number;
  readonly workloads: number;
  readonly policies: number;
  readonly clusterPolicies: number;
  readonly ports: readonly string[];
  readonly defaultPort: string;
  readonly against: boolean;
  readonly readError: string | null;
  readonly diagnosticCounts: string;
  /** Where observed flows come from, or null (no Flows tab). */
  readonly flows: string | null;
}

export interface HeatAxis {
  readonly id: string;
  readonly label: string;
  readonly pods: number;
}

export interface Heatmap {
  readonly level: 'namespace' | 'workload' | 'pod';
  readonly port: string;
  readonly rows: readonly HeatAxis[];
  readonly columns: readonly HeatAxis[];
  readonly cells: readonly (readonly [number, number, number])[];
  readonly millis: number;
}

/** A rule that decided one side of a flow (src/flows/types.ts DecidingRule). */
export interface DecidingRule {
  readonly direction: 'egress' | 'ingress';
  readonly tier: string;
  readonly outcome: string;
  readonly policy?: string;
  readonly rule?: number;
}

/** One flow as `/api/flows` answers it (src/serve/flow-view.ts ServedFlow). */
export interface ServedFlow {
  readonly src: { readonly ip: string; readonly pod?: string };
  readonly dst: { readonly ip: string; readonly pod?: string };
  readonly protocol: string;
  readonly port: number;
  readonly verdict: 'allowed' | 'denied';
  readonly decidedBy: readonly DecidingRule[];
  readonly count: number;
  readonly sampled?: boolean;
  readonly node?: string;
  readonly staged?: { readonly verdict: 'allowed' | 'denied'; readonly decidedBy: readonly DecidingRule[] };
  readonly mismatch?: string;
  readonly decidedText: string;
  readonly stagedText?: string;
  readonly check: { from: string; to: string; port: string; protocol: string } | null;
  readonly disagreement?: string;
}

export interface FlowsAnswer {
  readonly version: number;
  readonly source: string;
  readonly total: number;
  /** Flows the filters select (`flows` holds the first of them, up to the limit asked). */
  readonly matched: number;
  readonly flows: readonly ServedFlow[];
  readonly problems: readonly { source: string; message: string }[];
  readonly diagnostics: readonly { file: string; line: number; column: number; message: string }[];
}
