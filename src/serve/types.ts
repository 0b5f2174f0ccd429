/**
 * Contracts of `palisade serve`: what it is started with. What its JSON API answers, the page
 * and scripts read, is in api-types.ts (docs/SERVE.md documents every endpoint).
 */
import type { FlowAgent } from '../flows/index.ts';
import type { LoadResult } from '../ingest/types.ts';
import type { Semantics } from '../model/types.ts';

/** Reads one input (files or a cluster) again; `serve` calls it at start and on every change. */
type InputReader = () => Promise<LoadResult>;

/** Starts watching for changes (`changed` on each); resolves with the function that stops it. */
type ChangeSource = (changed: () => void) => Promise<() => void>;

/**
 * Where the flow views read what the datapaths saw: a flow file (NDJSON records, what
 * `palisade flows -o json` prints; read again when it changes), or agents' `/flows`, followed.
 */
export type FlowSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'agents'; readonly agents: readonly FlowAgent[] };

export interface ServeOptions {
  /** The input shown. */
  readonly read: InputReader;
  /** The input the diff view compares with (`--against`): the old side; the input is the new. */
  readonly readAgainst?: InputReader;
  /** Files and directories to watch for changes (the -f and --against paths). */
  readonly watch: readonly string[];
  /**
   * Another source of changes — a cluster's watch, when the input is a cluster: started after
   * the first reading, calls `changed` on every change, resolves with its stop.
   */
  readonly watchSource?: ChangeSource;
  readonly semantics: Semantics;
  /** Address to bind; 127.0.0.1 unless asked. */
  readonly address: string;
  /** Port to bind; 0 picks a free one. */
  readonly port: number;
  /** Further host names the page may be reached by (besides the bound address and localhost). */
  readonly allowedHosts?: readonly string[];
  /** Observed flows to show beside the input (`--flows`, `--agent`, `--lab`); none by default. */
  readonly flows?: FlowSource;
  /** Quiet period after a file event before the input is read again, ms (default 50). */
  readonly debounceMillis?: number;
}
