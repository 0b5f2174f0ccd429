/**
 * Decoding a large file in a worker thread while the main thread decodes the others: `compile -f`
 * of a generated cluster reads a 43 MB file of pods and a 31 MB file of policies, and the two
 * decode at the same time on two cores. What comes back is the pods' compact form
 * (compact-pods.ts), not a structured clone of decoded objects; a file holding anything but pods
 * that decode without a diagnostic comes back as `fallback` and the main thread decodes it as
 * before, so the cluster and the diagnostics are the same either way.
 *
 * One worker, one file at a time, started on the first file large enough to pay for it and
 * stopped when the load is settled: small inputs never start a thread.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { spawnWorker, workerScript } from '../util/worker-thread.ts';
import type { IdentifiedObject } from './build-cluster.ts';
import { readCompactPods, type CompactPods } from './compact-pods.ts';
import type { DecodeOptions } from './decode-object.ts';
import type { InputFile } from './types.ts';

/** Files from this size on are offered to the worker (a generated ×0.1 cluster's pods are 4.3 MB). */
const DEFAULT_OFFLOAD_BYTES = 8 * 1024 * 1024;

export interface OffloadRequest {
  readonly id: number;
  readonly file: InputFile;
  readonly options: DecodeOptions;
}

export type OffloadReply =
  { readonly id: number; readonly pods: CompactPods } | { readonly id: number; readonly fallback: true };

/** Decoded pods, in the file's order; undefined: decode the file on the main thread. */
export type OffloadResult = IdentifiedObject[] | undefined;

export class DecodeOffload {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, (result: OffloadResult) => void>();
  private nextId = 0;
  private stopped = false;

  private constructor(
    private readonly script: string,
    /** Files from this size on are offered to the worker. */
    readonly minBytes: number,
  ) {}

  /** An offload when a second core and the worker's module are there; undefined otherwise. */
  static create(minBytes = DEFAULT_OFFLOAD_BYTES): DecodeOffload | undefined {
    if (availableParallelism() < 2 || !Number.isFinite(minBytes)) return undefined;
    const script = workerScript(import.meta.url, 'decode-worker');
    return script === undefined ? undefined : new DecodeOffload(script, minBytes);
  }

  /** Whether to hand this file over: large enough, and the worker is not busy with another. */
  takes(file: InputFile): boolean {
    return !this.stopped && this.pending.size === 0 && file.text.length >= this.minBytes;
  }

  /**
   * Starts the worker ahead of its first file (a file it will take is waiting for company): its
   * start-up, about a third of a second of loading and compiling its modules, then overlaps with
   * this thread reading and decoding the next file instead of delaying the hand-over.
   */
  warm(): void {
    // Held only while a file is out (see decode): a warmed, idle worker keeps nothing alive.
    if (!this.stopped) this.start().unref();
  }

  decode(file: InputFile, options: DecodeOptions): Promise<OffloadResult> {
    // A worker that died (out of memory, say) is not started again: the main thread decodes.
    if (this.stopped) return Promise.resolve(undefined);
    const worker = this.start();
    const id = this.nextId++;
    // Held while a file is out, so that a caller waiting for nothing else keeps the process alive.
    worker.ref();
    return new Promise<OffloadResult>((resolve) => {
      this.pending.set(id, resolve);
      // Only the decoding's own options (the load's carry functions, which do not cross).
      const decodeOptions: DecodeOptions =
        options.defaultNamespace === undefined ? {} : { defaultNamespace: options.defaultNamespace };
      const request: OffloadRequest = { id, file, options: decodeOptions };
      worker.postMessage(request);
    });
  }

  /**
   * Stops the worker (pending files are then decoded on the main thread). Its exit is not waited
   * for: nothing of it is needed any more, and tearing down its heap takes a tenth of a second
   * the load would otherwise spend idle.
   */
  close(): Promise<void> {
    this.stopped = true;
    this.failAll();
    const worker = this.worker;
    this.worker = undefined;
    if (worker) {
      worker.unref();
      worker.terminate().catch(() => undefined);
    }
    return Promise.resolve();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker(this.script);
    worker.on('message', (reply: OffloadReply) => {
      const resolve = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      resolve?.('pods' in reply ? readCompactPods(reply.pods) : undefined);
    });
    // A worker that fails or stops leaves its file, and every later one, to the main thread: a
    // message posted to a dead worker is never answered, and the load would wait for it forever
    // (with nothing else keeping the process alive, it exited 0 having printed nothing).
    const gone = (): void => {
      this.stopped = true;
      if (this.worker === worker) this.worker = undefined;
      this.failAll();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    return (this.worker = worker);
  }

  private failAll(): void {
    for (const resolve of this.pending.values()) resolve(undefined);
    this.pending.clear();
  }
}
