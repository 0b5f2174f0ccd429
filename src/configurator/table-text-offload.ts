/**
 * The ids and printed rule lines of a large compile's distinct tables, made in a worker thread
 * while the main thread goes on compiling. A table's id is a hash of its rules' text and `compile`
 * prints that text again: at shape (a) ×1 that is 100,511 tables and 604,595 rule lines, about
 * 0.3 s of hashing and 0.4 s of formatting that the main thread did after the tables, with the
 * second core idle. Here each new table goes over as the serial numbers of its rules (a few
 * integers), each distinct rule's text once (107,603 of them), and the worker hashes and formats
 * as the tables come.
 *
 * Nothing here decides anything: a table's id is the same function of the same texts
 * (tableIdOfTexts), and a table the worker never answered for (it failed, or the process has
 * one core) computes its own id on the main thread when asked, as every table did before.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { ruleText, type Rule, type RuleTable } from '../model/rule.ts';
import { spawnWorker, workerScript } from '../util/worker-thread.ts';
import { adoptTableId } from './table-id.ts';

/** A table's rules as the configurator numbers them: one serial number per distinct rule. */
export interface NumberedRules {
  readonly length: number;
  readonly [index: number]: { readonly serial: number; readonly rule: Rule };
}

/** Told of each new distinct table, in the order the configurator makes them. */
export interface TableObserver {
  observe(table: RuleTable, rules: NumberedRules): void;
}

/** New tables and the texts of the rules first seen in them. */
export interface TableBatch {
  /** Per table, in order: its number of rules, then its rules' serial numbers. */
  readonly tables: Int32Array;
  /** Rules first seen in this batch: their serial numbers, and their texts in step. */
  readonly serials: Int32Array;
  readonly texts: readonly string[];
}

export type TableTextRequest = { readonly batch: TableBatch } | { readonly finish: true };

/** The worker's start-up data: whether to format the tables' rule lines (text output) or only hash. */
export interface TableTextOptions {
  readonly lines: boolean;
}

/**
 * Every table's id (16 characters each, in order) and, when asked for, its printed rule lines as
 * UTF-8 bytes (handed over, not copied: the text is ~36 MB at ×1 and is decoded table by table
 * as it is written); table i's are bytes `ends[i-1]` to `ends[i]`.
 */
export interface TablesReply {
  readonly ids: string;
  readonly lines?: Uint8Array<ArrayBuffer>;
  readonly ends?: Int32Array<ArrayBuffer>;
}

export type TableTextReply = TablesReply;

/** Tables sent per message: a message every few milliseconds of the main thread's compile. */
const BATCH_TABLES = 4096;

export class TableTextOffload implements TableObserver {
  private readonly tables: RuleTable[] = [];
  private readonly worker: Worker;
  /** Callers waiting for the worker's answers, in the order it answers (one per request). */
  private readonly waiting: ((reply: TableTextReply | undefined) => void)[] = [];
  private failed = false;
  /** Serial numbers whose text the worker has (1 = sent). */
  private sent = new Uint8Array(1 << 16);
  private ints = new Int32Array(1 << 15);
  private used = 0;
  private batchTables = 0;
  private newSerials: number[] = [];
  private newTexts: string[] = [];

  private constructor(
    script: string,
    private readonly lines: boolean,
  ) {
    this.worker = spawnWorker(script, { lines } satisfies TableTextOptions);
    // Held only while an answer is awaited: a worker left open never keeps the process alive.
    this.worker.unref();
    this.worker.on('message', (reply: TableTextReply) => {
      const resolve = this.waiting.shift();
      if (this.waiting.length === 0) this.worker.unref();
      resolve?.(reply);
    });
    // A worker that fails answers nothing more: the tables make their own ids, as without it.
    const gone = (): void => {
      this.failed = true;
      for (const resolve of this.waiting.splice(0)) resolve(undefined);
    };
    this.worker.on('error', gone);
    this.worker.on('exit', gone);
  }

  /**
   * An offload when a second core and the worker's module are there; undefined otherwise. With
   * `lines`, the worker formats the tables' rule lines too (for `compile`'s text).
   */
  static create(lines: boolean): TableTextOffload | undefined {
    if (availableParallelism() < 2) return undefined;
    const script = workerScript(import.meta.url, 'table-text-worker');
    return script === undefined ? undefined : new TableTextOffload(script, lines);
  }

  observe(table: RuleTable, rules: NumberedRules): void {
    if (this.failed) return;
    this.tables.push(table);
    this.reserve(rules.length + 1);
    this.ints[this.used++] = rules.length;
    for (let i = 0; i < rules.length; i++) {
      const { serial, rule } = rules[i] as { serial: number; rule: Rule };
      this.ints[this.used++] = serial;
      if (serial >= this.sent.length) this.sent = grown(this.sent, serial + 1);
      if (this.sent[serial] === 1) continue;
      this.sent[serial] = 1;
      this.newSerials.push(serial);
      this.newTexts.push(ruleText(rule));
    }
    if (++this.batchTables >= BATCH_TABLES) this.flush();
  }

  /**
   * Waits for the worker's tables, gives every table its id. Made with `lines`: each table's
   * printed rule lines (numbered, as `compile` prints them), decoded when asked for; undefined
   * without, or when the worker failed (the caller formats them itself). No table may be made
   * after this.
   */
  async finish(): Promise<((table: RuleTable) => string | undefined) | undefined> {
    this.flush();
    const reply = await this.ask({ finish: true });
    if (!reply || !('ids' in reply) || reply.ids.length !== this.tables.length * 16) return undefined;
    const { lines, ends } = reply;
    const indexOf = this.lines && lines && ends ? new Map<RuleTable, number>() : undefined;
    for (let i = 0; i < this.tables.length; i++) {
      const table = this.tables[i] as RuleTable;
      adoptTableId(table, reply.ids.slice(i * 16, i * 16 + 16));
      indexOf?.set(table, i);
    }
    if (!indexOf || !lines || !ends) return undefined;
    const bytes = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength);
    return (table) => {
      const i = indexOf.get(table);
      return i === undefined ? undefined : bytes.toString('utf8', i > 0 ? ends[i - 1] : 0, ends[i]);
    };
  }

  private ask(request: TableTextRequest, transfer: ArrayBuffer[] = []): Promise<TableTextReply | undefined> {
    if (this.failed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.worker.ref();
      this.worker.postMessage(request, transfer);
    });
  }

  /** Stops the worker: after the last answer wanted, or when the compile failed. */
  async close(): Promise<void> {
    this.failed = true;
    await this.worker.terminate();
  }

  private flush(): void {
    if (this.batchTables === 0 || this.failed) return;
    const tables = this.ints.slice(0, this.used);
    const serials = Int32Array.from(this.newSerials);
    const batch: TableBatch = { tables, serials, texts: this.newTexts };
    this.worker.postMessage({ batch } satisfies TableTextRequest, [tables.buffer, serials.buffer]);
    this.used = 0;
    this.batchTables = 0;
    this.newSerials = [];
    this.newTexts = [];
  }

  private reserve(more: number): void {
    if (this.used + more > this.ints.length) {
      const bigger = new Int32Array(Math.max(this.ints.length * 2, this.used + more));
      bigger.set(this.ints.subarray(0, this.used));
      this.ints = bigger;
    }
  }
}

function grown(bytes: Uint8Array<ArrayBuffer>, size: number): Uint8Array<ArrayBuffer> {
  const bigger = new Uint8Array(Math.max(bytes.length * 2, size));
  bigger.set(bytes);
  return bigger;
}
