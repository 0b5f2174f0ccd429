/**
 * The realizer in a worker thread, as the agent sees it (the Realizer contract): each call is a
 * message to realizer-worker.ts and its answer. Key changes cross in chunks, yielding between
 * them, so handing over a whole listing never holds this event loop for long.
 *
 * A worker that stops (a crash, running out of memory) fails what was asked of it and is started
 * again on the next call, whose first answer asks for a whole listing: the new worker's mirror is
 * empty, and the datapath kept enforcing what it held meanwhile.
 */
import type { Worker } from 'node:worker_threads';
import { setImmediate as yieldNow } from 'node:timers/promises';
import { DataplaneError } from '../dataplane/index.ts';
import { spawnWorker, workerScript } from '../util/worker-thread.ts';
import type { KeyChange } from './mirror.ts';
import type { FlowBatch, RealizeResult, Realizer } from './types.ts';
import type { RealizerRequest, RealizerWorkerData, WorkerFailure, WorkerReply } from './worker-protocol.ts';

/** Key changes per message. */
const CHUNK = 2000;

/** The worker's module, or undefined when it is not installed beside this one. */
export function realizerWorkerScript(): string | undefined {
  return workerScript(import.meta.url, 'realizer-worker');
}

interface Call {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class WorkerRealizer implements Realizer {
  readonly datapath: string;
  private worker: Worker | undefined;
  private readonly calls = new Map<number, Call>();
  private nextId = 0;
  private readonly listeners: ((why: string) => void)[] = [];
  /** A worker stopped: the next worker must be opened, and then given a whole listing. */
  private restart = false;
  private closing = false;

  constructor(
    private readonly script: string,
    private readonly data: RealizerWorkerData,
  ) {
    this.datapath = data.datapath;
  }

  prepare(): Promise<string> {
    this.spawn();
    return this.call<string>({ op: 'open', id: this.id() });
  }

  async realize(changes: readonly KeyChange[], relist: boolean): Promise<RealizeResult> {
    if (this.restart) {
      this.restart = false;
      this.spawn();
      await this.call<string>({ op: 'open', id: this.id() });
      if (!relist) throw relistError('the realizer worker was started again; it needs a whole listing');
    }
    for (let i = 0; i < changes.length; i += CHUNK) {
      this.worker?.postMessage({
        op: 'stage',
        changes: changes.slice(i, i + CHUNK),
      } satisfies RealizerRequest);
      if (i + CHUNK < changes.length) await yieldNow();
    }
    return this.call<RealizeResult>({ op: 'realize', id: this.id(), relist });
  }

  reconcile(): Promise<readonly string[] | undefined> {
    if (this.restart) return Promise.resolve(undefined);
    return this.call<readonly string[] | undefined>({ op: 'reconcile', id: this.id() });
  }

  onSuspect(listener: (why: string) => void): void {
    this.listeners.push(listener);
  }

  flows(): Promise<FlowBatch> {
    if (this.restart || !this.worker) return Promise.resolve({ records: [], lost: 0 });
    return this.call<FlowBatch>({ op: 'flows', id: this.id() });
  }

  /** Cleanup is done in the agent's own thread (`--cleanup` builds no worker). */
  cleanup(): Promise<string> {
    return Promise.reject(new Error('cleanup runs without a worker'));
  }

  async close(): Promise<void> {
    this.closing = true;
    const worker = this.worker;
    if (!worker) return;
    try {
      await this.call<undefined>({ op: 'close', id: this.id() });
    } finally {
      this.worker = undefined;
      await worker.terminate();
    }
  }

  private id(): number {
    return this.nextId++;
  }

  private spawn(): void {
    const worker = spawnWorker(this.script, this.data);
    this.worker = worker;
    worker.on('message', (reply: WorkerReply) => {
      if ('suspect' in reply) {
        for (const listener of this.listeners) listener(reply.suspect);
        return;
      }
      const call = this.calls.get(reply.id);
      if (!call) return;
      this.calls.delete(reply.id);
      if ('error' in reply) call.reject(failure(reply.error));
      else call.resolve(reply.result);
    });
    const stopped = (why: string): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      if (!this.closing) this.restart = true;
      const error = relistError(`the realizer worker stopped (${why})`);
      for (const call of this.calls.values()) call.reject(error);
      this.calls.clear();
    };
    worker.on('error', (error) => stopped(error.message));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
  }

  private call<T>(request: Exclude<RealizerRequest, { op: 'stage' }>): Promise<T> {
    const worker = this.worker;
    if (!worker) return Promise.reject(relistError('the realizer worker is not running'));
    return new Promise<T>((resolve, reject) => {
      this.calls.set(request.id, { resolve: resolve, reject });
      worker.postMessage(request);
    });
  }
}

/** A failure from the worker as the agent expects it: a tool's refusal stays one. */
function failure(error: WorkerFailure): Error {
  const made = error.tool ? new DataplaneError(error.message) : new Error(error.message);
  return Object.assign(made, { relist: error.relist });
}

function relistError(message: string): Error {
  return Object.assign(new Error(message), { relist: true });
}
