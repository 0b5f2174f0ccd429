/**
 * The input `serve` shows, kept current: read at start, read again a moment after any watched
 * file or directory changes (or the cluster, through `watchSource`), and announced to listeners
 * (the event stream) as a new snapshot.
 * Changes arriving while a reading runs make one more reading after it, never a pile of them.
 */
import type { FSWatcher } from 'node:fs';
import { Snapshot } from './snapshot.ts';
import type { ServeOptions } from './types.ts';
import { watchPath } from './watch-path.ts';

type SnapshotListener = (snapshot: Snapshot) => void;

export class LiveInput {
  private current?: Snapshot;
  private version = 0;
  private readonly listeners = new Set<SnapshotListener>();
  private readonly watchers: FSWatcher[] = [];
  private stopSource: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** The last reading's failure (a cluster that could not be read); the previous snapshot stays. */
  lastError: string | undefined;

  /** Settles when the first reading has: the snapshot, or why there is none. */
  readonly first: Promise<Snapshot>;
  private settleFirst!: { resolve(s: Snapshot): void; reject(e: unknown): void };

  constructor(private readonly options: ServeOptions) {
    this.first = new Promise<Snapshot>((resolve, reject) => (this.settleFirst = { resolve, reject }));
    // Requests wait on it; a failed first reading is the caller's to report (start rejects).
    this.first.catch(() => undefined);
  }

  /** Reads the input for the first time and starts watching. */
  async start(): Promise<Snapshot> {
    // Files are watched before they are first read: one replaced while it is being read is read
    // again right after (watching after the reading lost such an edit until the next one).
    for (const path of this.options.watch) {
      const watcher = watchPath(path, () => this.schedule());
      if (watcher) this.watchers.push(watcher);
    }
    try {
      await this.reload();
      this.settleFirst.resolve(this.snapshot);
    } catch (error) {
      this.settleFirst.reject(error);
      this.close();
      throw error;
    }
    const stop = await this.options.watchSource?.(() => this.schedule());
    if (this.closed) stop?.();
    else this.stopSource = stop;
    return this.snapshot;
  }

  get snapshot(): Snapshot {
    if (!this.current) throw new Error('serve: the input has not been read yet');
    return this.current;
  }

  onChange(listener: SnapshotListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.stopSource?.();
    this.listeners.clear();
  }

  /** Reads again now (also what a file event leads to, after the quiet period). */
  async reload(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.read().finally(() => (this.reading = undefined));
    await this.reading;
    if (this.again && !this.closed) {
      this.again = false;
      await this.reload();
    }
  }

  private async read(): Promise<void> {
    try {
      const [input, against] = await Promise.all([this.options.read(), this.options.readAgainst?.()]);
      if (this.closed) return;
      this.current = new Snapshot(++this.version, input, against, this.options.semantics, Date.now());
      this.lastError = undefined;
    } catch (error) {
      // The first reading must succeed (the command reports it); later ones keep the last state.
      if (!this.current) throw error;
      this.lastError = error instanceof Error ? error.message : String(error);
      return;
    }
    for (const listener of this.listeners) listener(this.current);
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), this.options.debounceMillis ?? 50);
  }
}
