/**
 * Flow records aggregated with bounded memory: one record per (source, destination, protocol,
 * port, verdict, what decided), counted, with first and last seen. At most `capacity` records are
 * kept; the least recently seen one is evicted to make room (a JavaScript Map keeps insertion
 * order, and a seen record is moved to its end), and evictions are counted, so a reader knows how
 * much it is not shown. Listeners hear every record as it is updated (`palisade flows --follow`).
 */
import type { FlowFilter, FlowRecord } from './types.ts';
import { matchesFlow } from './filter.ts';

/** Default most records kept: ~1 KB each as JSON, so ~10 MB. */
export const DEFAULT_FLOW_CAPACITY = 10_000;

export interface FlowTableStats {
  readonly records: number;
  readonly capacity: number;
  /** Records evicted to make room since the start. */
  readonly evicted: number;
  /** Connections counted since the start (sampled ones scaled up). */
  readonly connections: number;
}

type Listener = (record: FlowRecord) => void;

export class FlowTable {
  private readonly records = new Map<string, FlowRecord>();
  private readonly listeners = new Set<Listener>();
  private evicted = 0;
  private connections = 0;

  constructor(private readonly capacity = DEFAULT_FLOW_CAPACITY) {}

  /** Adds one record's connections (a fresh record or a batch already aggregated elsewhere). */
  add(record: FlowRecord): FlowRecord {
    const key = flowKey(record);
    const old = this.records.get(key);
    let merged = record;
    if (old) {
      this.records.delete(key);
      merged = {
        ...record,
        count: old.count + record.count,
        ...(old.sampled || record.sampled ? { sampled: true } : {}),
        firstSeen: old.firstSeen < record.firstSeen ? old.firstSeen : record.firstSeen,
        lastSeen: old.lastSeen > record.lastSeen ? old.lastSeen : record.lastSeen,
      };
    } else if (this.records.size >= this.capacity) {
      const oldest = this.records.keys().next();
      if (!oldest.done) {
        this.records.delete(oldest.value);
        this.evicted++;
      }
    }
    this.records.set(key, merged);
    this.connections += record.count;
    for (const listener of this.listeners) listener(merged);
    return merged;
  }

  /** The records matching `filter`, least recently seen first. */
  list(filter: FlowFilter = {}): FlowRecord[] {
    const out: FlowRecord[] = [];
    for (const record of this.records.values()) if (matchesFlow(record, filter)) out.push(record);
    return out;
  }

  /** Calls `listener` with every record updated from now on; returns how to stop. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): FlowTableStats {
    return {
      records: this.records.size,
      capacity: this.capacity,
      evicted: this.evicted,
      connections: this.connections,
    };
  }
}

/** What makes two records one: everything but the counts and the times. */
export function flowKey(record: FlowRecord): string {
  return [
    record.node ?? '',
    record.src.ip,
    record.dst.ip,
    record.protocol,
    record.port,
    record.verdict,
    decidedKey(record.decidedBy),
    record.staged ? stagedKey(record.staged) : '',
    record.mismatch ?? '',
  ].join('|');
}

// Records of one judgement share its decidedBy and staged objects (attribute.ts): their key
// parts are made once, not for every record of a busy node's feed.
const decidedKeys = new WeakMap<FlowRecord['decidedBy'], string>();
const stagedKeys = new WeakMap<NonNullable<FlowRecord['staged']>, string>();

function decidedKey(decidedBy: FlowRecord['decidedBy']): string {
  let key = decidedKeys.get(decidedBy);
  if (key === undefined) {
    key = decidedBy
      .map((d) => `${d.direction}:${d.tier}:${d.outcome}:${d.policy ?? ''}:${d.rule ?? ''}`)
      .join(',');
    decidedKeys.set(decidedBy, key);
  }
  return key;
}

function stagedKey(staged: NonNullable<FlowRecord['staged']>): string {
  let key = stagedKeys.get(staged);
  if (key === undefined) {
    key = `${staged.verdict}/${staged.decidedBy.map((d) => `${d.direction}:${d.policy ?? ''}:${d.rule ?? ''}`).join(',')}`;
    stagedKeys.set(staged, key);
  }
  return key;
}
