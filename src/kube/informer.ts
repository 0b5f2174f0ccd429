/**
 * An informer for one kind (in one namespace or all): list, then watch from the list's
 * resourceVersion with bookmarks; a watch the server ends is resumed from the last version seen;
 * `410 Gone` (the version was compacted away) means list again, and the handler reconciles; any
 * other failure is retried with exponential backoff. It can start from a recorded version
 * (resume after a restart: no list at all when the server still has the history). This is
 * client-go's reflector loop, written against KubeApi so the fake API server can drive it.
 */
import { KubeApiError } from './errors.ts';
import { listAll, type ListOptions } from './list.ts';
import { collectionPath } from './resources.ts';
import type { KubeApi, RawApiObject, ServedResource } from './types.ts';

/** What the informer reports, in order. */
export interface InformerHandler {
  listStart(): void;
  listObjects(objects: readonly RawApiObject[]): void;
  listDone(resourceVersion: string): void;
  listAbort(): void;
  upsert(object: RawApiObject, resourceVersion: string): void;
  remove(object: RawApiObject, resourceVersion: string): void;
  progress(resourceVersion: string): void;
  /** A failure that will be retried after `retryInMs`. */
  retrying?(error: KubeApiError, retryInMs: number): void;
  /** The server answered again: a list finished or a watch was established (after `retrying`, it recovered). */
  connected?(): void;
}

interface InformerOptions {
  /** Start by watching from this version (a list happens only if it is gone). */
  readonly resumeFrom?: string;
  readonly pageSize?: number;
  /** Longest backoff between retries (default 30 s). */
  readonly maxBackoffMs?: number;
  /** Watches are ended by the server after this many seconds, then resumed (default 5–10 min). */
  readonly watchTimeoutSeconds?: () => number;
  /**
   * Lists the collection at `path` into the handler itself (listObjects, or a form of its own)
   * and resolves with the list's resourceVersion; `onRestart` when the list starts again.
   * Default: `listAll` through the API into `handler.listObjects`. The reflector lists through
   * its encoding workers this way.
   */
  readonly lister?: (path: string, onRestart: () => void, options: ListOptions) => Promise<string>;
}

export class Informer {
  private stopped = false;
  private stopWatch: (() => void) | undefined;
  private listAbort: AbortController | undefined;
  private syncedResolve!: () => void;
  private sleepTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  /** Resolves once the informer holds the whole state: after its first list, or its first resumed watch. */
  readonly synced = new Promise<void>((resolve) => (this.syncedResolve = resolve));
  private resourceVersion: string | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly served: ServedResource,
    private readonly namespace: string | undefined,
    private readonly handler: InformerHandler,
    private readonly options: InformerOptions = {},
  ) {
    this.resourceVersion = options.resumeFrom;
  }

  /** The last resourceVersion seen. */
  get version(): string | undefined {
    return this.resourceVersion;
  }

  /** Runs until stop(). */
  async run(): Promise<void> {
    const path = collectionPath(this.served, this.namespace);
    let backoff = 100;
    const maxBackoff = this.options.maxBackoffMs ?? 30_000;
    while (!this.stopped) {
      let listing = false;
      try {
        if (this.resourceVersion === undefined) {
          listing = true;
          this.handler.listStart();
          this.listAbort = new AbortController();
          const restart = (): void => {
            this.handler.listAbort();
            this.handler.listStart();
          };
          const listOptions = {
            ...(this.options.pageSize ? { pageSize: this.options.pageSize } : {}),
            signal: this.listAbort.signal,
          };
          const rv = this.options.lister
            ? await this.options.lister(path, restart, listOptions)
            : await listAll(
                this.api,
                path,
                { onPage: (items) => this.handler.listObjects(items), onRestart: restart },
                listOptions,
              );
          if (this.stopped) return this.handler.listAbort();
          listing = false;
          this.resourceVersion = rv;
          this.handler.listDone(rv);
          this.syncedResolve();
        }
        const started = Date.now();
        let events = 0;
        const watch = await this.api.watch(
          path,
          {
            resourceVersion: this.resourceVersion,
            allowBookmarks: true,
            timeoutSeconds: this.options.watchTimeoutSeconds?.() ?? 300 + Math.floor(Math.random() * 300),
          },
          (event) => {
            events++;
            if (event.type === 'BOOKMARK') {
              this.resourceVersion = event.resourceVersion;
              this.handler.progress(event.resourceVersion);
              return;
            }
            const rv = (event.object.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
            if (typeof rv === 'string') this.resourceVersion = rv;
            if (event.type === 'DELETED') this.handler.remove(event.object, this.resourceVersion ?? '');
            else this.handler.upsert(event.object, this.resourceVersion ?? '');
          },
        );
        this.stopWatch = () => watch.stop();
        if (this.stopped) watch.stop();
        this.handler.connected?.();
        this.syncedResolve();
        await watch.done;
        this.stopWatch = undefined;
        // A watch that ends at once without anything is a server refusing us quietly: back off.
        if (events === 0 && Date.now() - started < 1000) {
          await this.sleep(backoff);
          backoff = Math.min(backoff * 2, maxBackoff);
        } else {
          backoff = 100;
        }
      } catch (error) {
        this.stopWatch = undefined;
        if (this.stopped) return;
        if (listing) this.handler.listAbort();
        const failure = error instanceof KubeApiError ? error : new KubeApiError('server', String(error));
        if (failure.kind === 'gone') {
          // The history we would resume from is compacted away: list again and reconcile.
          this.resourceVersion = undefined;
          continue;
        }
        const wait = failure.kind === 'not-found' ? maxBackoff : backoff;
        this.handler.retrying?.(failure, wait);
        await this.sleep(wait);
        backoff = Math.min(backoff * 2, maxBackoff);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.stopWatch?.();
    this.listAbort?.abort();
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    this.wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.sleepTimer = setTimeout(resolve, ms * (0.8 + Math.random() * 0.4));
    });
  }
}
