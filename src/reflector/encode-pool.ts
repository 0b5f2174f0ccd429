/**
 * The reflector's encode pool: list pages are parsed and encoded in worker threads, so the first
 * reflect of a large cluster is not bound to one core (parsing a page and validating its objects
 * is most of a reflector's work per object). Pages cross to a worker as the server's text and come
 * back as keys, values and digests — strings, cheap to copy — never as parsed objects, whose
 * structured clone would cost what parsing them does.
 *
 * Where worker threads cannot start (the worker's module is not beside this one, as in a
 * single-file bundle) pages are encoded on the main thread: the same result, one core.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { spawnWorker, workerScript } from '../util/worker-thread.ts';
import { KubeApiError } from '../kube/index.ts';
import type { ApiErrorKind, ServedResource } from '../kube/types.ts';
import type { KeyLayout } from '../reflected/index.ts';
import { encodePage } from './page-encoder.ts';
import type { EncodedPage } from './types.ts';

export interface PageEncoder {
  /** Parses and encodes one list page's text (`path` names the list in errors). */
  encode(text: string, path: string): Promise<EncodedPage>;
  /** Worker threads in use (0: the main thread encodes). */
  readonly threads: number;
  /** Pages the worker threads encoded (the rest, if any, the main thread did). */
  readonly pagesInWorkers: number;
  close(): Promise<void>;
}

interface Pending {
  resolve(page: EncodedPage): void;
  reject(error: Error): void;
}

interface Reply {
  id: number;
  page?: EncodedPage;
  error?: { kind: ApiErrorKind; message: string; status?: number };
}

/** At most this many workers: beyond it the main thread (HTTP, etcd) becomes the bound. */
const MAX_THREADS = 4;

/** An encoder over `threads` workers (default: one per core, at most four), or the main thread. */
export function startPageEncoder(
  layout: KeyLayout,
  served: readonly ServedResource[],
  options: {
    threads?: number;
    /** Told when pages are encoded on the main thread after all, and why. */
    onFallback?: (reason: string) => void;
  } = {},
): PageEncoder {
  const threads = options.threads ?? Math.min(MAX_THREADS, availableParallelism());
  const script = workerScript(import.meta.url, 'encode-worker');
  if (threads >= 1 && script === undefined) options.onFallback?.('the encode worker module is not installed');
  if (threads < 1 || script === undefined) return inlineEncoder(layout, served);
  return new WorkerPool(script, layout, served, threads, options.onFallback);
}

function inlineEncoder(layout: KeyLayout, served: readonly ServedResource[]): PageEncoder {
  return {
    threads: 0,
    pagesInWorkers: 0,
    encode: (text, path) => Promise.resolve().then(() => encodePage(text, path, layout, served)),
    close: () => Promise.resolve(),
  };
}

class WorkerPool implements PageEncoder {
  private readonly workers: { worker: Worker; pending: Map<number, Pending> }[] = [];
  private nextId = 0;
  private fallback: PageEncoder | undefined;
  private closing = false;
  pagesInWorkers = 0;

  constructor(
    script: string,
    private readonly layout: KeyLayout,
    private readonly served: readonly ServedResource[],
    threads: number,
    private readonly onFallback: ((reason: string) => void) | undefined,
  ) {
    for (let i = 0; i < threads; i++) {
      const worker = spawnWorker(script, { root: layout.root, served });
      worker.unref();
      const slot = { worker, pending: new Map<number, Pending>() };
      worker.on('message', (reply: Reply) => this.settle(slot.pending, reply));
      // A worker that fails takes its pages with it: they are encoded again on the main thread.
      worker.on('error', (error) => this.retire(slot, error.message));
      worker.on('exit', (code) => this.retire(slot, `it exited (${code})`));
      this.workers.push(slot);
    }
  }

  get threads(): number {
    return this.workers.length;
  }

  encode(text: string, path: string): Promise<EncodedPage> {
    const slot = this.leastBusy();
    if (!slot) return this.inline().encode(text, path);
    const id = this.nextId++;
    return new Promise<EncodedPage>((resolve, reject) => {
      slot.pending.set(id, {
        resolve,
        reject: (error) =>
          error instanceof KubeApiError ? reject(error) : resolve(this.inline().encode(text, path)),
      });
      slot.worker.postMessage({ id, text, path });
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map(({ worker }) => worker.terminate()));
  }

  private leastBusy(): { worker: Worker; pending: Map<number, Pending> } | undefined {
    let best: (typeof this.workers)[number] | undefined;
    for (const slot of this.workers) if (!best || slot.pending.size < best.pending.size) best = slot;
    return best;
  }

  private settle(pending: Map<number, Pending>, reply: Reply): void {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (reply.page) {
      this.pagesInWorkers++;
      waiting.resolve(reply.page);
    } else waiting.reject(new KubeApiError(reply.error!.kind, reply.error!.message, reply.error!.status));
  }

  private retire(slot: (typeof this.workers)[number], reason: string): void {
    const index = this.workers.indexOf(slot);
    if (index < 0) return;
    this.workers.splice(index, 1);
    if (!this.closing) this.onFallback?.(`an encode worker stopped: ${reason}`);
    for (const waiting of slot.pending.values()) waiting.reject(new Error('encode worker stopped'));
    slot.pending.clear();
  }

  private inline(): PageEncoder {
    return (this.fallback ??= inlineEncoder(this.layout, this.served));
  }
}
