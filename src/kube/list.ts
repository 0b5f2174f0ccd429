/**
 * A complete list of one kind, page by page (`limit` + `continue`): every page belongs to the
 * snapshot of the first; a continue token that expired (410) restarts the list from the start,
 * as client-go's pager does, after telling the caller to forget the pages it already got.
 * `listPages` is the pager over any page form (the reflector's pages arrive already encoded by
 * its workers); `listAll` is that pager over the API's parsed pages.
 */
import { KubeApiError } from './errors.ts';
import type { KubeApi, ListPage, PageCursor, RawApiObject } from './types.ts';

interface ListCallbacks {
  /** A page of items, in order. */
  onPage(items: readonly RawApiObject[], remainingItemCount: number | undefined): void | Promise<void>;
  /** The list restarts from scratch (its continue token expired): forget the pages so far. */
  onRestart?(): void;
}

/** Default page size, as client-go's informers use. */
const DEFAULT_PAGE_SIZE = 500;

export interface ListOptions {
  readonly pageSize?: number;
  readonly signal?: AbortSignal;
}

/** Fetches one page of a list in some form. */
type PageFetcher<P extends PageCursor> = (
  path: string,
  options: { limit: number; continue?: string },
  signal?: AbortSignal,
) => Promise<P>;

/** Lists everything at `path` through `fetchPage`; resolves with the snapshot's resourceVersion. */
export async function listPages<P extends PageCursor>(
  fetchPage: PageFetcher<P>,
  path: string,
  callbacks: { onPage(page: P): void | Promise<void>; onRestart?(): void },
  options: ListOptions = {},
): Promise<string> {
  const limit = options.pageSize ?? DEFAULT_PAGE_SIZE;
  for (let attempt = 0; ; attempt++) {
    let token: string | undefined;
    let resourceVersion = '';
    try {
      do {
        const page = await fetchPage(path, { limit, ...(token ? { continue: token } : {}) }, options.signal);
        if (!token) resourceVersion = page.resourceVersion;
        await callbacks.onPage(page);
        token = page.continue;
      } while (token);
      return resourceVersion;
    } catch (error) {
      // An expired continue token: the snapshot is gone; start a new one (a few times at most).
      if (error instanceof KubeApiError && error.kind === 'gone' && token && attempt < 5) {
        callbacks.onRestart?.();
        continue;
      }
      throw error;
    }
  }
}

/** Lists everything at `path`; resolves with the snapshot's resourceVersion. */
export function listAll(
  api: KubeApi,
  path: string,
  callbacks: ListCallbacks,
  options: ListOptions = {},
): Promise<string> {
  return listPages<ListPage>(
    (p, o, signal) => api.list(p, o, signal),
    path,
    {
      onPage: (page) => callbacks.onPage(page.items, page.remainingItemCount),
      ...(callbacks.onRestart ? { onRestart: () => callbacks.onRestart!() } : {}),
    },
    options,
  );
}

/**
 * A list response's body as a page: its items each standing alone (a typed list's items carry no
 * kind or apiVersion; they are put back), its resourceVersion and continue token. Pure, so the
 * reflector's worker threads read pages exactly as the client does.
 */
export function parseListBody(body: unknown, path: string): ListPage {
  const list = (body ?? {}) as {
    items?: unknown;
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: { resourceVersion?: unknown; continue?: unknown; remainingItemCount?: unknown };
  };
  if (!Array.isArray(list.items)) {
    throw new KubeApiError('server', `the API server's answer to list ${path} has no items`);
  }
  const kind =
    typeof list.kind === 'string' && list.kind.endsWith('List') ? list.kind.slice(0, -4) : undefined;
  const items = (list.items as RawApiObject[]).map((item) =>
    kind && item.kind === undefined ? { kind, apiVersion: list.apiVersion, ...item } : item,
  );
  const metadata = list.metadata ?? {};
  return {
    items,
    resourceVersion: typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '',
    ...(typeof metadata.continue === 'string' && metadata.continue !== ''
      ? { continue: metadata.continue }
      : {}),
    ...(typeof metadata.remainingItemCount === 'number'
      ? { remainingItemCount: metadata.remainingItemCount }
      : {}),
  };
}
