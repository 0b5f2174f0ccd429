/**
 * Contracts of the Kubernetes API layer: where a cluster is (resolved as kubectl resolves it),
 * the kinds Palisade reads, and the list/watch primitives the snapshot reader, the informers and
 * the reflector build on. Objects cross this boundary as raw JSON; only ingest's decoders turn
 * them into model objects (the official client's typed models rename fields, `from` → `_from`).
 */

/** A raw Kubernetes object as the API server sent it (JSON). */
export type RawApiObject = Record<string, unknown>;

/** How a cluster was found: which kubeconfig, context and server. */
export interface ClusterTarget {
  /** The API server's URL. */
  readonly server: string;
  /** The context used (`in-cluster` for a pod's service account). */
  readonly context: string;
  /** The context's default namespace (`default` when it names none). */
  readonly namespace: string;
  /** Where the configuration came from, for messages: a file, `KUBECONFIG`, or the service account. */
  readonly source: string;
}

/** What to resolve: the command line's `--kubeconfig` and `--context`, and the environment. */
export interface KubeconfigRequest {
  /** `--kubeconfig PATH`: that file only (it must exist); otherwise `KUBECONFIG`, then `~/.kube/config`. */
  readonly kubeconfig?: string;
  /** `--context NAME`; default: the configuration's current context. */
  readonly context?: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where a pod's service account is mounted (default `/var/run/secrets/kubernetes.io/serviceaccount`). */
  readonly serviceAccountRoot?: string;
}

/** A kind Palisade reads from the API. */
export interface ResourceKind {
  readonly kind: string;
  /** API group, `''` for the core group. */
  readonly group: string;
  /** Versions Palisade's decoders understand, preferred first. */
  readonly versions: readonly string[];
  readonly plural: string;
  readonly namespaced: boolean;
  /** Served by a CRD that a cluster may not have installed (an info when absent, not an error). */
  readonly optional: boolean;
}

/** A kind as a cluster serves it: the version chosen by discovery. */
export interface ServedResource {
  readonly resource: ResourceKind;
  readonly version: string;
}

/** Where a page leaves its list: the snapshot's version and the way on. */
export interface PageCursor {
  readonly resourceVersion: string;
  /** Absent on the last page. */
  readonly continue?: string;
  /** The server's estimate of items after this page, when it gives one. */
  readonly remainingItemCount?: number;
}

/** One page of a list. */
export interface ListPage extends PageCursor {
  readonly items: readonly RawApiObject[];
}

/** An event on a watch stream (ERROR events become a rejected watch, 410 as `gone`). */
export type WatchEvent =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: RawApiObject }
  | { readonly type: 'BOOKMARK'; readonly resourceVersion: string };

export interface WatchOptions {
  readonly resourceVersion: string;
  readonly allowBookmarks: boolean;
  /** The server ends the watch after this long (the informer then resumes from its last version). */
  readonly timeoutSeconds?: number;
}

/** A running watch: `done` resolves when the server ends it normally and rejects with a KubeApiError otherwise. */
export interface WatchHandle {
  readonly done: Promise<void>;
  stop(): void;
}

/** What went wrong talking to the API server; each has a one-line message for users. */
export type ApiErrorKind =
  | 'config' // no usable kubeconfig, context or credentials file
  | 'unauthorized' // 401
  | 'forbidden' // 403
  | 'not-found' // 404: the resource (a CRD) is not served
  | 'gone' // 410: the version or continue token was compacted away (or, 504, the server has not reached it)
  | 'unreachable' // connection refused, DNS, timeout, reset
  | 'tls' // the certificate could not be verified
  | 'server'; // any other answer

/** The API as the layers above use it: raw JSON in, raw JSON out, paths relative to the server. */
export interface KubeApi {
  readonly target: ClusterTarget;
  /** GET of one object or discovery document. */
  get(path: string, signal?: AbortSignal): Promise<RawApiObject>;
  /** One page of a list (`limit`, `continue`). */
  list(path: string, options: { limit: number; continue?: string }, signal?: AbortSignal): Promise<ListPage>;
  /**
   * One page of a list as the server's JSON text, unparsed (`parseListBody` reads it): for a
   * caller that parses pages elsewhere, such as the reflector's worker threads.
   */
  listText?(
    path: string,
    options: { limit: number; continue?: string },
    signal?: AbortSignal,
  ): Promise<string>;
  watch(path: string, options: WatchOptions, onEvent: (event: WatchEvent) => void): Promise<WatchHandle>;
}

/** Which namespaces to read: every one, or the listed ones (cluster-scoped kinds are always read whole). */
export type NamespaceScope =
  { readonly all: true } | { readonly all: false; readonly namespaces: readonly string[] };

/** Progress of a long read, for a progress bar: objects read so far and the server's estimate of the total. */
export type ProgressListener = (done: number, total: number) => void;
