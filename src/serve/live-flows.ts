/**
 * The observed flows serve shows beside its input, kept current: a flow file read at start and
 * again a moment after it changes (as the manifests are followed), or every named agent's
 * `/flows` followed live — the same reader `palisade flows` uses — and read again after a pause
 * when an agent goes away. Records are kept by the flow table's key, an update replacing the
 * record it updates; at most `capacity` of them (the least recently updated go first). Listeners
 * hear of changes at most every `debounceMillis`, however fast records arrive.
 */
import { readFile } from 'node:fs/promises';
import type { FSWatcher } from 'node:fs';
import type { Diagnostic } from '../model/types.ts';
import {
  DEFAULT_FLOW_CAPACITY,
  flowKey,
  readAgentFlows,
  readFlowFile,
  type FlowAgent,
  type FlowRecord,
} from '../flows/index.ts';
import type { FlowProblem } from './api-types.ts';
import type { FlowSource } from './types.ts';
import { watchPath } from './watch-path.ts';

interface LiveFlowsOptions {
  /** Quiet period before listeners hear of a change, ms (default 100). */
  readonly debounceMillis?: number;
  /** Pause before an agent that went away is asked again, ms (default 2,000). */
  readonly reconnectMillis?: number;
  /** Most records kept (default: the agent's own default per agent; a file's are all kept). */
  readonly capacity?: number;
}

export class LiveFlows {
  private records = new Map<string, FlowRecord>();
  private readonly listeners = new Set<(version: number) => void>();
  private readonly problems = new Map<string, string>();
  private readonly stop = new AbortController();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readTimer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private readonly capacity: number;
  /** Counts up with every change listeners hear of. */
  version = 0;
  /** The flow file's problems, each at its line and column (a bad line is skipped). */
  diagnostics: readonly Diagnostic[] = [];

  constructor(
    readonly source: FlowSource,
    private readonly options: LiveFlowsOptions = {},
  ) {
    this.capacity =
      options.capacity ??
      (source.kind === 'agents' ? DEFAULT_FLOW_CAPACITY * Math.max(1, source.agents.length) : Infinity);
  }

  /** What the records come from, in words: the file's path, or the agents. */
  get description(): string {
    if (this.source.kind === 'file') return this.source.path;
    const agents = this.source.agents;
    return agents.length === 1 ? (agents[0] as FlowAgent).label : `${agents.length} agents`;
  }

  /**
   * Reads the file (resolving when it has been read) and watches it; or starts following the
   * agents (resolving at once: an agent that is down is asked again, and said so meanwhile).
   */
  async start(): Promise<void> {
    if (this.source.kind === 'file') {
      const path = this.source.path;
      this.watcher = watchPath(path, () => {
        clearTimeout(this.readTimer);
        this.readTimer = setTimeout(() => void this.readFile(path), 50);
      });
      await this.readFile(path);
      return;
    }
    for (const agent of this.source.agents) void this.follow(agent);
  }

  list(): readonly FlowRecord[] {
    return [...this.records.values()];
  }

  problemList(): readonly FlowProblem[] {
    return [...this.problems].map(([source, message]) => ({ source, message }));
  }

  onChange(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.stop.abort();
    this.watcher?.close();
    clearTimeout(this.timer);
    clearTimeout(this.readTimer);
    this.listeners.clear();
  }

  /** Reads the whole file again; one more reading after this one when it changed meanwhile. */
  private async readFile(path: string): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        const read = readFlowFile(path, await readFile(path, 'utf8'));
        const records = new Map<string, FlowRecord>();
        for (const { record } of read.flows) records.set(flowKey(record), record);
        this.records = records;
        this.diagnostics = read.diagnostics;
        this.problems.delete(path);
      } catch (error) {
        // Removed or unreadable for a moment (an editor saving): the last records stay.
        this.problems.set(path, (error as NodeJS.ErrnoException).message);
      }
      this.changed();
    })().finally(() => (this.reading = undefined));
    await this.reading;
    if (this.again && !this.stop.signal.aborted) {
      this.again = false;
      await this.readFile(path);
    }
  }

  /** Follows one agent until closed, asking again after a pause whenever it goes away. */
  private async follow(agent: FlowAgent): Promise<void> {
    const signal = this.stop.signal;
    while (!signal.aborted) {
      try {
        await readAgentFlows(
          agent,
          {},
          { follow: true, signal, onConnected: () => this.problems.delete(agent.label) },
          (record) => this.put(record),
        );
        if (!signal.aborted) this.problems.set(agent.label, 'the agent ended the stream');
      } catch (error) {
        this.problems.set(agent.label, (error as Error).message);
      }
      if (signal.aborted) return;
      this.changed();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.reconnectMillis ?? 2_000);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  private put(record: FlowRecord): void {
    const key = flowKey(record);
    this.records.delete(key);
    this.records.set(key, record);
    if (this.records.size > this.capacity) {
      const oldest = this.records.keys().next();
      if (!oldest.done) this.records.delete(oldest.value);
    }
    this.changed();
  }

  private changed(): void {
    if (this.timer || this.stop.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.version++;
      for (const listener of this.listeners) listener(this.version);
    }, this.options.debounceMillis ?? 100);
  }
}
