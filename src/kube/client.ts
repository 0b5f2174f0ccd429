/**
 * The KubeApi over the official client's request machinery: `KubeConfig.applyToFetchOptions`
 * (TLS, tokens, client certificates, exec plugins, proxies) with the fetch it ships for lists
 * and GETs, and its `Watch` for watch streams. Bodies stay raw JSON — the client's typed models
 * would rename and drop fields. Loaded lazily: only commands that talk to a cluster import it.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Watch } from '@kubernetes/client-node/dist/watch.js';
import type nodeFetch from 'node-fetch';
import { KubeApiError, networkError, statusError, type RequestDescription } from './errors.ts';
import { resolveKubeconfig } from './kubeconfig.ts';
import { parseListBody } from './list.ts';
import type {
  ClusterTarget,
  KubeApi,
  KubeconfigRequest,
  ListPage,
  RawApiObject,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './types.ts';

/** Resolves the kubeconfig and returns an API client for its context. */
export async function connect(request: KubeconfigRequest): Promise<KubeApi> {
  const { config, target } = await resolveKubeconfig(request);
  const [{ default: fetch }, { Watch }] = await Promise.all([
    import('node-fetch'),
    import('@kubernetes/client-node/dist/watch.js'),
  ]);
  return new FetchKubeApi(config, target, fetch, new Watch(config));
}

type Fetch = typeof nodeFetch;
type WatchClient = Watch;

class FetchKubeApi implements KubeApi {
  constructor(
    private readonly config: KubeConfig,
    readonly target: ClusterTarget,
    private readonly fetch: Fetch,
    private readonly watcher: WatchClient,
  ) {}

  async get(path: string, signal?: AbortSignal): Promise<RawApiObject> {
    return (await this.request(path, describe('get', path), signal)) as RawApiObject;
  }

  async list(
    path: string,
    options: { limit: number; continue?: string },
    signal?: AbortSignal,
  ): Promise<ListPage> {
    return parseListBody(await this.request(listPath(path, options), describe('list', path), signal), path);
  }

  async listText(
    path: string,
    options: { limit: number; continue?: string },
    signal?: AbortSignal,
  ): Promise<string> {
    return (await this.request(listPath(path, options), describe('list', path), signal, 'text')) as string;
  }

  async watch(
    path: string,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
  ): Promise<WatchHandle> {
    const request = describe('watch', path);
    let settle!: { resolve: () => void; reject: (error: KubeApiError) => void };
    const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    let failure: KubeApiError | undefined;
    let stopped = false;
    const query: Record<string, string | number | boolean> = {
      resourceVersion: options.resourceVersion,
      allowWatchBookmarks: options.allowBookmarks,
    };
    if (options.timeoutSeconds !== undefined) query.timeoutSeconds = options.timeoutSeconds;
    let controller: AbortController | undefined;
    try {
      controller = await this.watcher.watch(
        path,
        query,
        (type: string, object: unknown) => {
          if (failure || stopped) return;
          if (type === 'BOOKMARK') {
            const rv = (object as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion;
            if (typeof rv === 'string') onEvent({ type: 'BOOKMARK', resourceVersion: rv });
          } else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
            onEvent({ type, object: object as RawApiObject });
          } else if (type === 'ERROR') {
            const status = object as { code?: unknown };
            failure = statusError(
              this.target.server,
              typeof status.code === 'number' ? status.code : 500,
              object,
              request,
            );
            controller?.abort();
          }
        },
        (error: unknown) => {
          if (failure) return settle.reject(failure);
          if (stopped || error === null || error === undefined || isAbort(error)) return settle.resolve();
          const code = (error as { statusCode?: unknown }).statusCode;
          settle.reject(
            typeof code === 'number'
              ? statusError(this.target.server, code, undefined, request)
              : networkError(this.target.server, error),
          );
        },
      );
    } catch (error) {
      throw networkError(this.target.server, error);
    }
    return {
      done,
      stop: () => {
        stopped = true;
        controller?.abort();
        settle.resolve();
      },
    };
  }

  /** A GET; the body parsed (or, with `text`, as the server sent it when the answer is 200). */
  private async request(
    path: string,
    what: RequestDescription,
    signal?: AbortSignal,
    as: 'json' | 'text' = 'json',
  ): Promise<unknown> {
    let init;
    try {
      init = await this.config.applyToFetchOptions({});
    } catch (error) {
      throw new KubeApiError(
        'config',
        `cannot use the credentials of context ${this.target.context}: ${firstLine(error)}`,
      );
    }
    const headers = init.headers as { set(name: string, value: string): void };
    headers.set('Accept', 'application/json');
    let response;
    try {
      response = await this.fetch(this.target.server + path, {
        ...init,
        method: 'GET',
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      throw networkError(this.target.server, error);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw networkError(this.target.server, error);
    }
    let body: unknown;
    if (response.status === 200 && as === 'text') return text;
    try {
      body = JSON.parse(text);
    } catch (error) {
      if (response.status === 200) throw networkError(this.target.server, error);
      body = undefined;
    }
    if (response.status !== 200) throw statusError(this.target.server, response.status, body, what);
    return body;
  }
}

function listPath(path: string, options: { limit: number; continue?: string }): string {
  const query = new URLSearchParams({ limit: String(options.limit) });
  if (options.continue) query.set('continue', options.continue);
  return `${path}?${query.toString()}`;
}

/** `list pods at the cluster scope` from a path like `/api/v1/namespaces/shop/pods`. */
function describe(verb: string, path: string): RequestDescription {
  const parts = path
    .split('?')[0]!
    .split('/')
    .filter((p) => p !== '');
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  const group = parts[0] === 'api' ? '' : (parts[1] ?? '');
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    return { verb, resource: rest[2]!, group, namespace: decodeURIComponent(rest[1]!) };
  }
  return { verb, resource: rest[0] ?? path, group };
}

function isAbort(error: unknown): boolean {
  return (
    (error as { name?: unknown }).name === 'AbortError' || (error as { type?: unknown }).type === 'aborted'
  );
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
