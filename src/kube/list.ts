/**
 * A complete list of one kind, page by page (`limit` + `continue`): every page belongs to the
 * snapshot of the first; a continue token that expired (410) restarts the list from the start,
 * as client-go's pager does, after telling the caller to forget the pages it already got.
 */
import { KubeApiError } from './errors.ts';
import type { KubeApi, RawApiObject } from './types.ts';

export interface ListCallbacks {
  /** A page of items, in order. */
  onPage(items: readonly RawApiObject[], remainingItemCount: number | undefined): void | Promise<void>;
  /** The list restarts from scratch (its continue token expired): forget the pages so far. */
  onRestart?(): void;
}

/** Default page size, as client-go's informers use. */
export const DEFAULT_PAGE_SIZE = 500;

/** Lists everything at `path`; resolves with the snapshot's resourceVersion. */
export async function listAll(
  api: KubeApi,
  path: string,
  callbacks: ListCallbacks,
  options: { pageSize?: number; signal?: AbortSignal } = {},
): Promise<string> {
  const limit = options.pageSize ?? DEFAULT_PAGE_SIZE;
  for (let attempt = 0; ; attempt++) {
    let token: string | undefined;
    let resourceVersion = '';
    try {
      do {
        const page = await api.list(path, { limit, ...(token ? { continue: token } : {}) }, options.signal);
        if (!token) resourceVersion = page.resourceVersion;
        await callbacks.onPage(page.items, page.remainingItemCount);
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
